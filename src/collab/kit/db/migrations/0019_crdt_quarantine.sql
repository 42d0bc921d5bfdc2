-- Realtime updates that cannot be applied to their editor's document, or leave it unreadable (issue #34): a release
-- that checked less stored them. Compaction and REST writes move them here out of crdt_updates, so no fold, read or
-- sweep trips on them again, and an operator can still look at what a client sent.
create table crdt_quarantine (
    seq              bigint primary key,
    api_key_id       text not null,
    organization_id  text not null,
    document_id      text not null,
    editor_id        text not null,
    yjs_update       bytea not null,
    user_id          text,
    created_at       bigint not null,
    reason           text not null,
    quarantined_at   bigint not null,
    foreign key (api_key_id, organization_id, document_id, editor_id)
        references crdt_editors (api_key_id, organization_id, document_id, editor_id)
        on delete cascade on update cascade
);
create index crdt_quarantine_editor_idx on crdt_quarantine (api_key_id, organization_id, document_id, editor_id);
