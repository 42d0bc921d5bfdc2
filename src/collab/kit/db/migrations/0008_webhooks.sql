-- Advanced webhooks: endpoints (Svix-shaped), messages (one per event; the body is fixed when the event
-- happens), deliveries (one per message and endpoint, with a due time for retries) and their attempts.
create table webhook_endpoints (
    api_key_id             text not null references api_keys (id) on delete cascade,
    id                     text not null,
    url                    text not null,
    description            text not null default '',
    filter_types           text[],
    channels               text[],
    disabled               boolean not null default false,
    disabled_reason        text,
    rate_limit             int,
    uid                    text,
    metadata               jsonb not null default '{}',
    -- AES-GCM ciphertexts of the signing secrets; the previous one signs beside the current until its time.
    secret_enc             bytea not null,
    previous_secret_enc    bytea,
    previous_secret_until  bigint,
    -- The first failed attempt since the last success: 5 days of failures disable the endpoint.
    failing_since          bigint,
    created_at             bigint not null,
    updated_at             bigint not null,
    primary key (api_key_id, id)
);
create unique index webhook_endpoints_uid on webhook_endpoints (api_key_id, uid) where uid is not null;
create index webhook_endpoints_list_idx on webhook_endpoints (api_key_id, created_at, id);

create table webhook_messages (
    api_key_id    text not null references api_keys (id) on delete cascade,
    id            text not null,
    event_type    text not null,
    -- The exact bytes sent (JSON, base64 text or the encrypted envelope); null when it could not be made.
    body          text,
    content_type  text not null,
    error         text,
    -- Whom the event is about (actor, recipients): user-data deletion removes their messages.
    organization_id  text,
    user_ids      text[] not null default '{}',
    created_at    bigint not null,
    primary key (api_key_id, id)
);
create index webhook_messages_users_idx on webhook_messages using gin (user_ids);
create index webhook_messages_list_idx on webhook_messages (api_key_id, created_at desc, id desc);

create table webhook_deliveries (
    api_key_id    text not null,
    message_id    text not null,
    endpoint_id   text not null,
    -- pending: waits for due_at (the sweep queues it); queued: a job will make attempt `attempts + 1`;
    -- sending: a job holds it until lease_until; succeeded / failed: done.
    status        text not null check (status in ('pending', 'queued', 'sending', 'succeeded', 'failed')),
    attempts      int not null default 0,
    max_attempts  int not null,
    due_at        bigint not null,
    lease_until   bigint,
    last_error    text,
    created_at    bigint not null,
    updated_at    bigint not null,
    primary key (api_key_id, message_id, endpoint_id),
    foreign key (api_key_id, message_id) references webhook_messages (api_key_id, id) on delete cascade,
    foreign key (api_key_id, endpoint_id) references webhook_endpoints (api_key_id, id) on delete cascade
);
create index webhook_deliveries_due_idx on webhook_deliveries (due_at) where status = 'pending';
create index webhook_deliveries_lease_idx on webhook_deliveries (lease_until) where status = 'sending';
create index webhook_deliveries_endpoint_idx on webhook_deliveries (api_key_id, endpoint_id, message_id);

create table webhook_attempts (
    api_key_id   text not null,
    message_id   text not null,
    endpoint_id  text not null,
    attempt      int not null,
    status_code  int,
    response     text,
    error        text,
    duration_ms  int not null,
    at           bigint not null,
    primary key (api_key_id, message_id, endpoint_id, attempt),
    foreign key (api_key_id, message_id, endpoint_id)
        references webhook_deliveries (api_key_id, message_id, endpoint_id) on delete cascade
);

-- crdt.update_data is throttled per editor: the first change opens a row due 5 s later, later changes
-- only count into it, and the sweep turns a due row into one event.
create table webhook_crdt_pending (
    api_key_id       text not null references api_keys (id) on delete cascade,
    organization_id  text not null,
    document_id      text not null,
    editor_id        text not null,
    last_updated_by  text,
    updates          int not null default 1,
    first_at         bigint not null,
    last_at          bigint not null,
    due_at           bigint not null,
    primary key (api_key_id, organization_id, document_id, editor_id)
);
create index webhook_crdt_pending_due_idx on webhook_crdt_pending (due_at);
