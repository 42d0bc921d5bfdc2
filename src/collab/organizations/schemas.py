"""Request models of the organization endpoints."""

from pydantic import Field, field_validator, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, Name, distinct, id_list


class OrganizationIn(Model):
    organizationId: Id
    organizationName: Name = None


class AddOrganizations(Model):
    organizations: list[OrganizationIn] = Field(min_length=1, max_length=MAX_BATCH)

    @field_validator("organizations")
    @classmethod
    def _distinct(cls, items):
        distinct((item.organizationId for item in items), "organizationId")
        return items


class OrganizationChange(Model):
    organizationId: Id
    organizationName: Name


class UpdateOrganizations(AddOrganizations):
    organizations: list[OrganizationChange] = Field(min_length=1, max_length=MAX_BATCH)


class GetOrganizations(Model):
    organizationIds: id_list() = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class DeleteOrganizations(Model):
    organizationIds: id_list()


class UpdateDisableState(Model):
    organizationIds: id_list()
    disabled: bool
