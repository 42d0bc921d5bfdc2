"""Request models of the organization endpoints."""

from typing import Annotated, Any, Generic, TypeVar

from pydantic import Field

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, Name, unique_by
from collab.kit.openapi import Doc, PageOf

T = TypeVar("T")


class OrganizationIn(Model):
    organizationId: Id
    organizationName: Name = None


Organizations = Annotated[list[OrganizationIn], Field(min_length=1, max_length=MAX_BATCH), unique_by("organizationId")]


class AddOrganizations(Model):
    organizations: Organizations


class OrganizationChange(Model):
    organizationId: Id
    organizationName: Name


OrganizationChanges = Annotated[list[OrganizationChange],
                                Field(min_length=1, max_length=MAX_BATCH),
                                unique_by("organizationId")]


class UpdateOrganizations(AddOrganizations):
    organizations: OrganizationChanges


class GetOrganizations(Model):
    organizationIds: IdList = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class DeleteOrganizations(Model):
    organizationIds: IdList


class UpdateDisableState(Model):
    organizationIds: IdList
    disabled: bool


# Response models (documentation and contract tests; see collab.kit.openapi).


class NextPageOf(PageOf[T], Generic[T]):
    nextPageToken: str | None = Field(description="Velt's name for pageToken (the same value).")


class NextPage(Doc, Generic[T]):
    """`{result: {status, message, data: [...], pageToken, nextPageToken}}`: the page token under both names."""

    result: NextPageOf[T]


def next_page(record: Any) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a paged list of `record` whose token is also under Velt's `nextPageToken`."""
    return {200: {"model": NextPage[record]}}


class Organization(Doc):
    organizationId: str
    id: str = Field(description="Velt's name for organizationId (the same value).")
    organizationName: str | None = Field(None, description="Absent when the organization was never named.")
    disabled: bool
    createdAt: int = Field(description="Epoch milliseconds.")
    updatedAt: int = Field(description="Epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An organization as clients see it."""
        record = {"organizationId": row["id"], "id": row["id"], "disabled": row["disabled"]}
        if row["name"] is not None:
            record["organizationName"] = row["name"]
        return record | {"createdAt": row["created_at"], "updatedAt": row["updated_at"]}
