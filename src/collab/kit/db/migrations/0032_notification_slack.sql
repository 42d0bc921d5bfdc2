-- Notification delivery to Slack (ADR 0050, "Slack"): the API key's Slack incoming-webhook URL, sealed beside its
-- e-mail service, and one Slack message per user of an organization, batched and retried as e-mails are.

alter table notification_email_configs
    add column slack_webhook_enc   bytea,
    add column slack_webhook_hint  text;

create table notification_slack_messages (
    api_key_id       text not null references api_keys (id) on delete cascade,
    id               text not null,
    organization_id  text not null,
    user_id          text not null,
    status           text not null default 'open'
                     check (status in ('open', 'pending', 'sending', 'sent', 'failed', 'skipped', 'cancelled')),
    size             integer not null default 0,
    attempts         integer not null default 0,
    last_error       text,
    due_at           bigint not null,
    lease_until      bigint,
    created_at       bigint not null,
    sent_at          bigint,
    updated_at       bigint not null,
    primary key (api_key_id, id)
);
create unique index notification_slack_open_idx on notification_slack_messages (api_key_id, organization_id, user_id)
    where status = 'open';
create index notification_slack_due_idx on notification_slack_messages (due_at) where status in ('open', 'pending');
create index notification_slack_recent_idx on notification_slack_messages (api_key_id, created_at desc);

create table notification_slack_items (
    api_key_id       text not null references api_keys (id) on delete cascade,
    message_id       text not null,
    notification_id  text not null,
    document_id      text,
    headline         text not null,
    body             text not null,
    created_at       bigint not null,
    primary key (api_key_id, message_id, notification_id),
    foreign key (api_key_id, message_id) references notification_slack_messages (api_key_id, id) on delete cascade
);
