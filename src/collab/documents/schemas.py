"""Request models of documents, folders and document migration."""

from pydantic import Field, field_validator, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, Name, distinct, id_list


class DocumentIn(Model):
    documentId: Id
    documentName: Name = None


class AddDocuments(Model):
    organizationId: Id
    createOrganization: bool = False
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_BATCH)
    folderId: Id = None
    createFolder: bool = False

    @field_validator("documents")
    @classmethod
    def _distinct(cls, items):
        distinct((item.documentId for item in items), "documentId")
        return items


class GetDocuments(Model):
    organizationId: Id
    documentIds: id_list() = None
    folderId: Id = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class DocumentChange(Model):
    documentId: Id
    documentName: Name = None
    folderId: Id = None

    @model_validator(mode="after")
    def _something(self):
        if self.documentName is None and self.folderId is None:
            raise ValueError("Provide documentName or folderId")
        return self


class UpdateDocuments(Model):
    organizationId: Id
    documents: list[DocumentChange] = Field(min_length=1, max_length=MAX_BATCH)

    @field_validator("documents")
    @classmethod
    def _distinct(cls, items):
        distinct((item.documentId for item in items), "documentId")
        return items


class DeleteDocuments(Model):
    organizationId: Id
    documentIds: id_list()


class MigrateDocument(Model):
    organizationId: Id
    documentId: Id
    newDocumentId: Id

    @model_validator(mode="after")
    def _differs(self):
        if self.newDocumentId == self.documentId:
            raise ValueError("newDocumentId must differ from documentId")
        return self


class MigrationStatus(Model):
    organizationId: Id
    migrationId: Id


class FolderIn(Model):
    folderId: Id
    folderName: Name = None
    parentFolderId: Id = None


class AddFolders(Model):
    organizationId: Id
    createOrganization: bool = False
    folders: list[FolderIn] = Field(min_length=1, max_length=MAX_BATCH)

    @field_validator("folders")
    @classmethod
    def _distinct(cls, items):
        distinct((item.folderId for item in items), "folderId")
        return items


class GetFolders(Model):
    organizationId: Id
    folderId: Id = None
    maxDepth: int = Field(None, ge=0, le=1000)
