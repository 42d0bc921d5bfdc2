"""Request models of documents, folders and document migration."""

from typing import Annotated, Any, Literal

from pydantic import Field

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, IdList30, Name, unique_by
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules


class DocumentIn(Model):
    documentId: Id
    documentName: Name = None


Documents = Annotated[list[DocumentIn], Field(min_length=1, max_length=MAX_BATCH), unique_by("documentId")]


class AddDocuments(Model):
    organizationId: Id
    createOrganization: bool = False
    documents: Documents
    folderId: Id = None
    createFolder: bool = False


class GetDocuments(Model):
    organizationId: Id
    documentIds: IdList = None
    folderId: Id = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class DocumentChange(Model):
    documentId: Id
    documentName: Name = None
    folderId: Id = None

    _rules = rules(
        rule("documentName",
             "folderId")(lambda v: (Broken(None, "Provide documentName or folderId")
                                    if v.get("documentName") is None and v.get("folderId") is None else None)))


DocumentChanges = Annotated[list[DocumentChange], Field(min_length=1, max_length=MAX_BATCH), unique_by("documentId")]


class UpdateDocuments(Model):
    organizationId: Id
    documents: DocumentChanges


class DeleteDocuments(Model):
    organizationId: Id
    documentIds: IdList


class MigrateDocument(Model):
    organizationId: Id
    documentId: Id
    newDocumentId: Id

    _rules = rules(
        rule("documentId",
             "newDocumentId")(lambda v: (Broken("newDocumentId", "newDocumentId must differ from documentId")
                                         if v.get("newDocumentId") == v.get("documentId") else None)))


class MigrationStatus(Model):
    organizationId: Id
    migrationId: Id


class FolderIn(Model):
    folderId: Id
    folderName: Name = None
    parentFolderId: Id = None
    accessType: Literal["public", "organizationPrivate", "restricted"] = None  # none: the parent's (ADR 0051)


Folders = Annotated[list[FolderIn], Field(min_length=1, max_length=MAX_BATCH), unique_by("folderId")]


class AddFolders(Model):
    organizationId: Id
    createOrganization: bool = False
    folders: Folders


def _whole_tree_only(v):
    # One folder's subtree is answered whole; paging and the top-level filter are for the organization's tree.
    if v.get("folderId") is None:
        return None
    return [
        Broken(f, f"{f} cannot be combined with folderId")
        for f in ("rootFoldersOnly", "pageSize", "pageToken") if v.get(f) not in (None, False)
    ] or None


class GetFolders(Model):
    organizationId: Id
    folderId: Id = None
    maxDepth: int = Field(None, ge=0, le=1000)
    rootFoldersOnly: bool = False
    pageSize: int = Field(None, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)

    _rules = rules(rule("folderId", "rootFoldersOnly", "pageSize", "pageToken")(_whole_tree_only))


class FolderChange(Model):
    folderId: Id
    folderName: Name = None
    parentFolderId: Id = None

    _rules = rules(
        rule(
            "folderName",
            "parentFolderId")(lambda v: (Broken(None, "Provide folderName or parentFolderId")
                                         if v.get("folderName") is None and v.get("parentFolderId") is None else None)))


FolderChanges = Annotated[list[FolderChange], Field(min_length=1, max_length=MAX_BATCH), unique_by("folderId")]


class UpdateFolders(Model):
    organizationId: Id
    folders: FolderChanges


class DeleteFolder(Model):
    organizationId: Id
    folderId: Id


class MoveDocuments(Model):
    organizationId: Id
    documentIds: IdList30
    folderId: Id


class DocumentFilter(Model):
    key: Id
    operator: Literal["==", "!=", "<", "<=", ">", ">=", "in", "not-in", "array-contains", "array-contains-any"]
    value: Any = None


class CountDocuments(Model):
    organizationId: Id
    folderId: Id = None
    excludeFolderDocs: bool = False
    filters: list[DocumentFilter] = Field(None, max_length=10)

    _rules = rules(
        rule("excludeFolderDocs", "filters", "folderId")(lambda v: [
            Broken("excludeFolderDocs", f"excludeFolderDocs cannot be combined with {f}")
            for f in ("filters", "folderId") if v.get("excludeFolderDocs") and v.get(f) is not None
        ] or None))


# Response models (documentation and contract tests; see collab.kit.openapi).

AccessType = Literal["public", "organizationPrivate", "restricted"]
# Where neither a document nor a folder above it sets a type: the rule before access types (ADR 0051).
DEFAULT_ACCESS_TYPE = "organizationPrivate"


class Document(Doc):
    documentId: str
    id: str = Field(description="Velt's name for documentId (the same value).")
    organizationId: str
    documentName: str | None = Field(None, description="Absent when the document was never named.")
    folderId: str | None = Field(None, description="Absent when the document is in no folder.")
    disabled: bool = Field(description="True when the document's own access is disabled (everyone is denied).")
    accessType: AccessType = Field(
        description="The effective access type: the document's own, else the nearest folder's above it that sets one, "
        "else organizationPrivate (ADR 0051).")
    createdAt: int = Field(description="Epoch milliseconds.")
    updatedAt: int = Field(description="Epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A document as clients see it (unset fields left out), with Velt's `id` beside `documentId`."""
        record = {"documentId": row["id"], "id": row["id"], "organizationId": row["organization_id"]}
        if row["name"] is not None:
            record["documentName"] = row["name"]
        if row["folder_id"] is not None:
            record["folderId"] = row["folder_id"]
        kind = row["access_type"] or row.get("folder_access_type") or DEFAULT_ACCESS_TYPE
        return record | {
            "disabled": row["disabled"], "accessType": kind, "createdAt": row["created_at"],
            "updatedAt": row["updated_at"]
        }


class Folder(Doc):
    folderId: str
    organizationId: str
    parentFolderId: str | None = Field(description="Null for a top-level folder.")
    ancestors: list[str] = Field(description="Folder IDs from the top-level folder down to the parent.")
    folderName: str | None = Field(None, description="Absent when the folder was never named.")
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds: the last rename or move, else createdAt.")
    accessType: AccessType = Field(
        description="The effective access type: the folder's own, else the nearest folder's above it that sets one, "
        "else organizationPrivate (ADR 0051).")
    inheritAccessFromParent: bool = Field(description="True when the folder sets no access type of its own.")
    subFolders: list["Folder"] | None = Field(
        None, description="With `folderId`: on the folder asked for, its subfolders nested as Velt answers them (down "
        "to `maxDepth`, at most 50 levels; the flat list beside it holds them all). Absent on a folder without any.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A folder with its parent and its ancestors, root first, and its effective access type."""
        record = {
            "folderId": row["id"], "organizationId": row["organization_id"], "parentFolderId": row["parent_id"],
            "ancestors": list(row["ancestors"])
        }
        if row["name"] is not None:
            record["folderName"] = row["name"]
        return record | {
            "createdAt": row["created_at"], "lastUpdated": row["updated_at"] or row["created_at"],
            "accessType": row["effective_type"] or DEFAULT_ACCESS_TYPE, "inheritAccessFromParent": row["access_type"]
            is None
        }


class DocumentCount(Doc):
    count: int
    filtersApplied: bool | None = Field(
        None, description="Present when filters were sent: false, as documents carry no metadata to filter on here.")


class MigrationStarted(Doc):
    migrationId: str


class Migration(Doc):
    migrationId: str
    status: Literal["pending", "in_progress", "completed", "failed"]
    documentId: str
    newDocumentId: str
    reason: str | None = Field(None, description="Why the migration failed; absent otherwise.")
