-- Realtime (issue 19): Yjs updates that arrived over the WebSocket, appended one row each before they are
-- relayed (one cheap insert instead of rewriting the editor's whole state per keystroke), and folded into
-- crdt_editors.state by compaction. An editor's document is its state plus its pending updates, in seq order.
create table crdt_updates (
    seq              bigint generated always as identity primary key,
    api_key_id       text not null,
    organization_id  text not null,
    document_id      text not null,
    editor_id        text not null,
    yjs_update       bytea not null,
    user_id          text,
    created_at       bigint not null,
    foreign key (api_key_id, organization_id, document_id, editor_id)
        references crdt_editors (api_key_id, organization_id, document_id, editor_id) on delete cascade
);
create index crdt_updates_editor_idx on crdt_updates (api_key_id, organization_id, document_id, editor_id, seq);
-- The compaction sweep finds editors whose oldest pending update has waited long enough.
create index crdt_updates_created_idx on crdt_updates (created_at);
create index crdt_updates_user_idx on crdt_updates (api_key_id, user_id) where user_id is not null;

-- Live state (livestate/broadcast): the last value per document and liveStateDataId.
create table live_states (
    api_key_id          text not null references api_keys (id) on delete cascade,
    organization_id     text not null,
    document_id         text not null,
    live_state_data_id  text not null,
    data                jsonb not null,
    updated_at          bigint not null,
    primary key (api_key_id, organization_id, document_id, live_state_data_id)
);
