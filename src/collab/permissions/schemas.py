"""Request models of permissions and token generation."""

from typing import Literal

from pydantic import Field, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList30, IdList100, Name
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules

ResourceType = Literal["organization", "folder", "document"]
AccessRole = Literal["viewer", "editor"]
AccessType = Literal["public", "organizationPrivate", "restricted"]


def _organization(v):
    given = v.get("organizationId")
    if v.get("type") == "organization":
        if given not in (None, v.get("id")):
            return Broken("organizationId", "organizationId must equal id for an organization entry")
    elif "type" in v and given is None:
        return Broken("organizationId", f"organizationId is required when type is {v['type']}")
    return None


class ResourceRef(Model):
    type: ResourceType
    id: Id
    organizationId: Id = None

    _rules = rules(rule("type", "id", "organizationId")(_organization))

    @model_validator(mode="after")
    def _own_organization(self):
        # An organization entry is its own organization (checked by the rule above).
        if self.type == "organization":
            self.organizationId = self.id
        return self


class Resource(ResourceRef):
    accessRole: AccessRole = "editor"
    # Unix seconds; the bound refuses milliseconds, the usual mistake.
    expiresAt: float = Field(None, ge=0, le=10**11, description="Unix timestamp in seconds")


class Permissions(Model):
    resources: list[Resource] = Field(min_length=1, max_length=MAX_BATCH)


class ResourceRefs(Model):
    resources: list[ResourceRef] = Field(min_length=1, max_length=MAX_BATCH)


def _one_of(first: str, second: str):
    """A principal rule: the body names exactly one of two fields."""
    return lambda v: (None if (v.get(first) is None) !=
                      (v.get(second) is None) else Broken(None, f"Provide exactly one of {first} and {second}"))


class UserRef(Model):
    userId: Id


class GroupRef(Model):
    organizationId: Id
    organizationUserGroupId: Id


class AddPermissions(Model):
    user: UserRef = None
    group: GroupRef = None
    permissions: Permissions

    _rules = rules(rule("user", "group")(_one_of("user", "group")))


class RemovePermissions(Model):
    userId: Id = None
    group: GroupRef = None
    permissions: ResourceRefs

    _rules = rules(rule("userId", "group")(_one_of("userId", "group")))


class GetPermissions(Model):
    organizationId: Id
    userIds: IdList30
    folderIds: IdList100 = None
    documentIds: IdList100 = None


class UserProperties(Model):
    name: Name = None
    email: str = Field(None, max_length=320)
    isAdmin: bool = False


class GenerateToken(Model):
    userId: Id
    userProperties: UserProperties = None
    permissions: Permissions = None


class GetToken(GenerateToken):
    """auth/token/get, Velt's older name of generate_token: its body, and the credentials in it where Velt's v1
    puts them (the headers, when sent, win)."""

    apiKey: str | None = Field(None, max_length=200)  # the bounds the headers have (kit/auth.py)
    authToken: str | None = Field(None, max_length=500)


# Response models (documentation and contract tests; see collab.kit.openapi).

EFFECTIVE_TYPE = ("On folder and document entries of `auth/permissions/get` (Velt's): the resource's effective access "
                  "type, its own or inherited from the nearest folder above that sets one (ADR 0051). Absent on "
                  "organizations and on resources that do not exist.")


class Granted(Doc):
    """Effective access to a resource: the winning role of the grants that apply."""

    accessRole: AccessRole
    expiresAt: int | None = Field(None, description="Unix seconds; absent when a winning grant never expires.")
    accessType: AccessType | None = Field(None, description=EFFECTIVE_TYPE)


class NoAccess(Doc):
    """Why a user has no access to a resource."""

    error: str
    errorCode: Literal["does_not_exist", "permission_denied"]
    accessType: AccessType | None = Field(None, description=EFFECTIVE_TYPE)


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


# Access types (ADR 0051): Velt's organizations/documents/access/update, folders/access/update and
# documents/access/disablestate/update.


class UpdateDocumentAccess(Model):
    organizationId: Id
    documentIds: IdList100
    accessType: AccessType


class UpdateDocumentDisabled(Model):
    organizationId: Id
    documentIds: IdList100
    disabled: bool


class UpdateFolderAccess(Model):
    organizationId: Id
    folderIds: IdList100
    accessType: AccessType = None
    inheritFromParent: bool = False

    @model_validator(mode="after")
    def _one(self):
        if (self.accessType is None) == (not self.inheritFromParent):
            raise ValueError("Provide accessType, or inheritFromParent: true")
        return self


class AccessOutcome(Doc):
    """One resource's answer to an access update, keyed by its id."""

    success: bool
    id: str
    message: str
    accessType: AccessType | None = Field(None, description="The type now set; null when it inherits its parent's.")
    inheritFromParent: bool | None = None
    disabled: bool | None = None


# The permission provider (ADR 0051): Velt's workspace/permissionproviderconfig/get|update, auth/generate_signature.
class ProviderSettings(Model):
    permissionProviderUrl: str = Field(None, max_length=2000)
    authToken: str = Field(None, max_length=1000)
    # collab's addition to Velt's keys (ADR 0051, Bounds): unset, answers must be signed whenever a token is set.
    requireSignedAnswers: bool = Field(
        None, description="Whether the provider's answers must carry the signature `auth/generate_signature` gives "
        "(an unsigned one denies). Default: required whenever an auth token is set.")


class UpdateProviderConfig(Model):
    usePermissionProvider: bool = None
    permissionProviderConfig: ProviderSettings = None

    @model_validator(mode="after")
    def _some(self):
        if self.usePermissionProvider is None and self.permissionProviderConfig is None:
            raise ValueError("Provide usePermissionProvider or permissionProviderConfig")
        return self


class ProviderSettingsOut(Doc):
    permissionProviderUrl: str
    authToken: str = Field(description="The last four characters only, after `****`; empty when none is set.")
    requireSignedAnswers: bool = Field(
        description="Whether an answer without collab's signature (`auth/generate_signature`) is denied: as set, "
        "else whenever an auth token is set.")


class ProviderConfig(Doc):
    usePermissionProvider: bool
    permissionProviderConfig: ProviderSettingsOut


class PermissionData(Model):
    """One decision of a permission provider's answer, as it will be signed."""

    userId: Id
    resourceId: Id
    type: Literal["organization", "folder", "document", "context"]
    hasAccess: bool
    organizationId: str = Field(None, min_length=1, max_length=200)
    accessRole: Literal["viewer", "editor"] = None
    expiresAt: int = Field(None, ge=0)


class GenerateSignature(Model):
    permissions: list[PermissionData] = Field(min_length=1, max_length=500)


class Signature(Doc):
    signature: str = Field(description="Hex: put it as `signature` beside `data` in the provider's answer.")
