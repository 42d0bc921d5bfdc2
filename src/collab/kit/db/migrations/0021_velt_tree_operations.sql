-- Velt's tree operations (issue #37, ADR 0048): folders are renamed and moved, so they carry when they last
-- changed (null until then: a folder's lastUpdated is its createdAt); users are invited by e-mail to an
-- organization, a folder or a document, and accepting grants that access.
alter table folders add column updated_at bigint;

-- One invitation per e-mail and target; the target's row going (or a document taking a new id) takes it along.
create table user_invitations (
    api_key_id         text not null,
    organization_id    text not null,
    id                 text not null,
    type               text not null check (type in ('org_user', 'folder_user', 'doc_user')),
    folder_id          text,
    document_id        text,
    -- The invited resource: the document's or the folder's id, else the organization's own (org_user). Derived, so a
    -- migrated document's new id (the foreign key's cascade) moves it too.
    resource_id        text generated always as (coalesce(document_id, folder_id, organization_id)) stored,
    email              text not null,
    status             text not null default 'PENDING'
                       check (status in ('PENDING', 'ACCEPTED', 'REJECTED', 'WITHDRAWN')),
    organization_name  text,
    folder_name        text,
    document_name      text,
    invited_by         jsonb,
    -- The user who accepted, once accepted.
    user_id            text,
    created_at         bigint not null,
    updated_at         bigint not null,
    primary key (api_key_id, organization_id, id),
    unique (api_key_id, organization_id, type, resource_id, email),
    constraint user_invitations_organization_fkey foreign key (api_key_id, organization_id)
        references organizations (api_key_id, id) on delete cascade,
    constraint user_invitations_folder_fkey foreign key (api_key_id, organization_id, folder_id)
        references folders (api_key_id, organization_id, id) on delete cascade,
    constraint user_invitations_document_fkey foreign key (api_key_id, organization_id, document_id)
        references documents (api_key_id, organization_id, id) on delete cascade on update cascade,
    check ((type = 'org_user' and folder_id is null and document_id is null)
           or (type = 'folder_user' and folder_id is not null and document_id is null)
           or (type = 'doc_user' and document_id is not null and folder_id is null))
);
create index user_invitations_email_idx on user_invitations (api_key_id, organization_id, email, id);
create index user_invitations_folder_idx on user_invitations (api_key_id, organization_id, folder_id)
    where folder_id is not null;
create index user_invitations_document_idx on user_invitations (api_key_id, organization_id, document_id)
    where document_id is not null;
