-- In-app notifications, and the notification service's pending work: batches of events with a due time.
create table notifications (
    api_key_id                              text not null references api_keys (id) on delete cascade,
    id                                      text not null,
    organization_id                         text not null,
    document_id                             text,
    location_id                             text,
    notification_source                     text not null,
    notification_source_data                jsonb,
    action_user                             jsonb,
    display_body_message                    text,
    display_headline_message_template       text,
    display_headline_message_template_data  jsonb,
    notify_users                            jsonb not null default '{}',
    notify_users_by_user_id                 jsonb not null default '{}',
    -- null: whoever may see the document; otherwise only these users (a private comment).
    visible_to                              text[],
    read_by                                 text[] not null default '{}',
    "timestamp"                             bigint not null,
    created_at                              bigint not null,
    updated_at                              bigint not null,
    primary key (api_key_id, id)
);
create index notifications_document_idx on notifications (api_key_id, organization_id, document_id, "timestamp" desc);
create index notifications_recipients_idx on notifications using gin (notify_users_by_user_id jsonb_path_ops);

-- One open batch per key collects events until its window closes or it holds maxActivities events.
create table notification_batches (
    api_key_id       text not null references api_keys (id) on delete cascade,
    id               text not null,
    organization_id  text not null,
    document_id      text,
    batch_key        text not null,
    recipient        text,
    status           text not null default 'open' check (status in ('open', 'closed', 'flushed')),
    size             int not null default 0,
    max_size         int not null,
    opened_at        bigint not null,
    due_at           bigint not null,
    notification_id  text,
    primary key (api_key_id, id)
);
create unique index notification_batches_one_open on notification_batches (api_key_id, batch_key) where status = 'open';
create index notification_batches_due_idx on notification_batches (due_at) where status <> 'flushed';

create table notification_batch_items (
    api_key_id       text not null,
    batch_id         text not null,
    activity_id      text not null,
    organization_id  text not null,
    document_id      text,
    action_type      text not null,
    action_user      jsonb not null,
    entity_data      jsonb,
    recipients       text[] not null,
    visible_to       text[],
    created_at       bigint not null,
    primary key (api_key_id, batch_id, activity_id),
    foreign key (api_key_id, batch_id) references notification_batches (api_key_id, id) on delete cascade
);
