-- Presence of users on documents, and recordings (recorder annotations) kept version by version.
-- No foreign keys to documents or organizations: feature data may arrive before the document is registered.
-- Times are epoch milliseconds from the service clock.
create table presence (
    api_key_id       text not null references api_keys (id) on delete cascade,
    organization_id  text not null,
    document_id      text not null,
    user_id          text not null,
    name             text,
    email            text,
    status           text not null,
    last_seen        bigint not null,
    primary key (api_key_id, organization_id, document_id, user_id)
);
-- User-data deletion finds a user's rows across documents.
create index presence_user_idx on presence (api_key_id, user_id);

-- One row per version; document_id is outside the key, so moving a document to a new id cannot collide.
create table recordings (
    api_key_id       text not null references api_keys (id) on delete cascade,
    organization_id  text not null,
    document_id      text not null,
    annotation_id    text not null,
    version          int not null check (version > 0),
    recording_type   text not null,
    mode             text not null,
    display_name     text not null,
    duration_ms      bigint not null check (duration_ms >= 0),
    attachments      jsonb not null,
    from_user        jsonb,
    created_at       bigint not null,
    primary key (api_key_id, organization_id, annotation_id, version)
);
create index recordings_document_idx on recordings (api_key_id, organization_id, document_id, annotation_id);
create index recordings_user_idx on recordings (api_key_id, (from_user ->> 'userId'));
