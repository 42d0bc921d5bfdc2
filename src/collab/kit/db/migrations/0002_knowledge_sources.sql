-- Files uploaded for extraction, kept as workspace knowledge sources (the bytes, the text, the tasks, the result).
create table knowledge_sources (
    id              text primary key,
    api_key_id      text not null references api_keys (id) on delete cascade,
    kind            text not null default 'extraction_upload',
    file_name       text,
    mime_type       text not null,
    size_bytes      int not null,
    sha256          text not null,
    content         bytea not null,
    canonical_text  text,
    tasks           jsonb,
    result          jsonb,
    provider        text,
    model           text,
    status          text not null default 'processing' check (status in ('processing', 'ready', 'failed')),
    error           text,
    created_at      timestamptz not null default now(),
    updated_at      timestamptz not null default now()
);
create index knowledge_sources_tenant_idx on knowledge_sources (api_key_id, created_at desc);
