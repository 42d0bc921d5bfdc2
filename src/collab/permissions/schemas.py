"""Request models of permissions and token generation."""

from typing import Literal

from pydantic import Field, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, Name, id_list
from collab.kit.openapi import Doc

ResourceType = Literal["organization", "folder", "document"]
AccessRole = Literal["viewer", "editor"]


class ResourceRef(Model):
    type: ResourceType
    id: Id
    organizationId: Id = None

    @model_validator(mode="after")
    def _organization(self):
        if self.type == "organization":
            if self.organizationId not in (None, self.id):
                raise ValueError("organizationId must equal id for an organization entry")
            self.organizationId = self.id
        elif self.organizationId is None:
            raise ValueError(f"organizationId is required when type is {self.type}")
        return self


class Resource(ResourceRef):
    accessRole: AccessRole = "editor"
    # Unix seconds; the bound refuses milliseconds, the usual mistake.
    expiresAt: float = Field(None, ge=0, le=10**11, description="Unix timestamp in seconds")


class Permissions(Model):
    resources: list[Resource] = Field(min_length=1, max_length=MAX_BATCH)


class ResourceRefs(Model):
    resources: list[ResourceRef] = Field(min_length=1, max_length=MAX_BATCH)


class UserRef(Model):
    userId: Id


class GroupRef(Model):
    organizationId: Id
    organizationUserGroupId: Id


class AddPermissions(Model):
    user: UserRef = None
    group: GroupRef = None
    permissions: Permissions

    @model_validator(mode="after")
    def _one_principal(self):
        if (self.user is None) == (self.group is None):
            raise ValueError("Provide exactly one of user and group")
        return self


class RemovePermissions(Model):
    userId: Id = None
    group: GroupRef = None
    permissions: ResourceRefs

    @model_validator(mode="after")
    def _one_principal(self):
        if (self.userId is None) == (self.group is None):
            raise ValueError("Provide exactly one of userId and group")
        return self


class GetPermissions(Model):
    organizationId: Id
    userIds: id_list(30)
    folderIds: id_list(100) = None
    documentIds: id_list(100) = None


class UserProperties(Model):
    name: Name = None
    email: str = Field(None, max_length=320)
    isAdmin: bool = False


class GenerateToken(Model):
    userId: Id
    userProperties: UserProperties = None
    permissions: Permissions = None


# Response models (documentation and contract tests; see collab.kit.openapi).


class Granted(Doc):
    """Effective access to a resource: the winning role of the grants that apply."""

    accessRole: AccessRole
    expiresAt: int | None = Field(None, description="Unix seconds; absent when a winning grant never expires.")


class NoAccess(Doc):
    """Why a user has no access to a resource."""

    error: str
    errorCode: Literal["does_not_exist", "permission_denied"]


Access = Granted | NoAccess


class UserAccess(Doc):
    """One user's effective access, each section keyed by resource ID."""

    organization: dict[str, Access]
    folders: dict[str, Access]
    documents: dict[str, Access]


class PermissionsRemoved(Doc):
    removed: int = Field(description="How many grants were revoked.")


class UserToken(Doc):
    token: str = Field(description="A JWT signed with the API key's own Ed25519 key (EdDSA, header `kid`; claims "
                                   "`iss` collab, `aud` the API key), valid for 48 hours; verify it with "
                                   "auth/tokenkeys/get.")


class Jwk(Doc):
    """A public key (RFC 8037) that verifies user tokens; `kid` is its RFC 7638 thumbprint."""

    kty: Literal["OKP"]
    crv: Literal["Ed25519"]
    x: str = Field(description="The public key, base64url.")
    kid: str
    alg: Literal["EdDSA"]
    use: Literal["sig"]


class TokenKeys(Doc):
    """A JWKS document: the keys that verify this API key's user tokens, the signing key first, then the
    previous key version and, during a secret rotation, the same under the previous secret."""

    keys: list[Jwk]
