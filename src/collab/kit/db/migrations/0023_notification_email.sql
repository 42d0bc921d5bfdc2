-- Per-user notification preferences, the API key's e-mail service, and notification e-mails (ADR 0050).

-- One row per user and organization ('' document) or document; a null channel inherits the level above.
create table notification_preferences (
    api_key_id       text not null references api_keys (id) on delete cascade,
    organization_id  text not null,
    user_id          text not null,
    document_id      text not null default '',
    inbox            text check (inbox in ('ALL', 'MINE', 'NONE')),
    email            text check (email in ('ALL', 'MINE', 'NONE')),
    slack            text check (slack in ('ALL', 'MINE', 'NONE')),
    updated_at       bigint not null,
    primary key (api_key_id, organization_id, user_id, document_id)
);

-- The API key's e-mail service (workspace/emailconfig): the plain settings as JSON, the secrets encrypted.
create table notification_email_configs (
    api_key_id          text primary key references api_keys (id) on delete cascade,
    use_email_service   boolean not null default false,
    config              jsonb not null default '{}',
    api_key_enc         bytea,
    api_key_last4       text,
    smtp_password_enc   bytea,
    updated_at          bigint not null
);

-- One e-mail to one user of one organization: open while it gathers notifications (the batch window), then
-- pending until sent (or retried, failed, skipped, cancelled). Its items are the notifications it reports.
create table notification_emails (
    api_key_id       text not null references api_keys (id) on delete cascade,
    id               text not null,
    organization_id  text not null,
    user_id          text not null,
    email            text not null,
    status           text not null default 'open'
                     check (status in ('open', 'pending', 'sending', 'sent', 'failed', 'skipped', 'cancelled')),
    size             integer not null default 0,
    attempts         integer not null default 0,
    provider         text,
    subject          text,
    last_error       text,
    due_at           bigint not null,
    lease_until      bigint,
    created_at       bigint not null,
    sent_at          bigint,
    updated_at       bigint not null,
    primary key (api_key_id, id)
);
create unique index notification_emails_open_idx on notification_emails (api_key_id, organization_id, user_id)
    where status = 'open';
create index notification_emails_due_idx on notification_emails (due_at) where status in ('open', 'pending');
create index notification_emails_recent_idx on notification_emails (api_key_id, created_at desc);

create table notification_email_items (
    api_key_id       text not null references api_keys (id) on delete cascade,
    email_id         text not null,
    notification_id  text not null,
    document_id      text,
    headline         text not null,
    body             text not null,
    created_at       bigint not null,
    primary key (api_key_id, email_id, notification_id),
    foreign key (api_key_id, email_id) references notification_emails (api_key_id, id) on delete cascade
);
