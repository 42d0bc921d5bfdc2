"""Request models of documents, folders and document migration."""

from pydantic import Field, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import Id, Name, batch, id_list


class DocumentIn(Model):
    documentId: Id
    documentName: Name = None


Documents = batch(DocumentIn, "documentId")


class AddDocuments(Model):
    organizationId: Id
    createOrganization: bool = False
    documents: Documents
    folderId: Id = None
    createFolder: bool = False


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


DocumentChanges = batch(DocumentChange, "documentId")


class UpdateDocuments(Model):
    organizationId: Id
    documents: DocumentChanges


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


Folders = batch(FolderIn, "folderId")


class AddFolders(Model):
    organizationId: Id
    createOrganization: bool = False
    folders: Folders


class GetFolders(Model):
    organizationId: Id
    folderId: Id = None
    maxDepth: int = Field(None, ge=0, le=1000)
