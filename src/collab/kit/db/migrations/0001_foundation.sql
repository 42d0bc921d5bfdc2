-- Workspaces, API keys (the tenants), auth tokens, per-key console settings, and user-visible job state.
create extension if not exists vector;

create table workspaces (
    id               text primary key,
    name             text not null,
    owner_email      text not null,
    owner_id         text not null,
    owner_name       text not null,
    owner_avatar     text not null default '',
    auth_token_hash  bytea not null,
    auth_token_enc   bytea not null,
    plan             text not null default 'free' check (plan in ('free', 'paid')),
    is_root          boolean not null,
    created_at       timestamptz not null default now()
);
create index workspaces_owner_email_idx on workspaces (lower(owner_email));
create unique index workspaces_root_per_email_key on workspaces (lower(owner_email)) where is_root;
create unique index workspaces_owner_name_key on workspaces (lower(owner_email), lower(name));

create table api_keys (
    id                       text primary key,
    workspace_id             text not null references workspaces (id) on delete cascade,
    name                     text not null,
    type                     text not null check (type in ('testing', 'production')),
    owner_email              text not null,
    enable_advanced_queries  boolean not null default false,
    webhook_config           jsonb,
    activity_config          jsonb,
    notification_config      jsonb,
    created_at               timestamptz not null default now()
);
create index api_keys_workspace_idx on api_keys (workspace_id, created_at);

create table auth_tokens (
    id          bigint generated always as identity primary key,
    api_key_id  text not null references api_keys (id) on delete cascade,
    name        text not null,
    domains     text[] not null default '{}',
    token_hash  bytea not null,
    token_enc   bytea not null,
    created_at  timestamptz not null default now()
);
create index auth_tokens_api_key_idx on auth_tokens (api_key_id);

-- Customer keys for model providers (Ask AI, extraction), AES-GCM bound to workspace, key and provider.
create table ai_provider_keys (
    api_key_id  text not null references api_keys (id) on delete cascade,
    provider    text not null check (provider in ('openai', 'anthropic', 'gemini')),
    key_enc     bytea not null,
    last4       text not null,
    updated_at  timestamptz not null default now(),
    primary key (api_key_id, provider)
);

-- User-visible state of background jobs; arq only delivers them.
create table jobs (
    id           text primary key,
    api_key_id   text references api_keys (id) on delete cascade,
    function     text not null,
    args         jsonb not null default '{}',
    status       text not null default 'queued'
                 check (status in ('queued', 'running', 'succeeded', 'failed')),
    attempts     int not null default 0,
    result       jsonb,
    error        text,
    created_at   timestamptz not null default now(),
    enqueued_at  timestamptz,
    updated_at   timestamptz not null default now()
);
create index jobs_status_idx on jobs (status, enqueued_at) where status in ('queued', 'running');
