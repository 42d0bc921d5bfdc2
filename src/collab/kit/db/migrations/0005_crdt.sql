-- CRDT editor content: one Yjs document per editor of a document, stored as the Yjs update that encodes
-- its whole state, with the shared type (`type`) and root name (`content_key`) that hold the content.
-- No foreign keys to documents or organizations: editors may write before the document is registered.
-- Times are epoch milliseconds from the service clock.
create table crdt_editors (
    api_key_id       text not null references api_keys (id) on delete cascade,
    organization_id  text not null,
    document_id      text not null,
    editor_id        text not null,
    type             text not null check (type in ('text', 'map', 'array', 'xml', 'xmltext')),
    content_key      text not null,
    state            bytea not null,
    last_updated_by  text,
    session_id       text,
    created_at       bigint not null,
    last_update      bigint not null,
    primary key (api_key_id, organization_id, document_id, editor_id)
);
-- User-data deletion finds the documents a user changed last.
create index crdt_editors_user_idx on crdt_editors (api_key_id, last_updated_by) where last_updated_by is not null;
