-- Knowledge sources (ADR 0057): every source stays one row of knowledge_sources (extraction's uploads included);
-- its versions, chunks, rules, their vectors and the pending by-reference uploads live in tables of their own.
alter table knowledge_sources
    add column organization_id  text,
    add column document_id      text,
    add column version          int not null default 1,
    add column rule_based       boolean not null default false,
    add column used_raw_fallback boolean not null default false,
    add column failure_reason   text;
create index knowledge_sources_updated_idx on knowledge_sources (api_key_id, updated_at desc);

create table knowledge_versions (
    source_id       text not null references knowledge_sources (id) on delete cascade,
    version         int not null,
    api_key_id      text not null,
    canonical_text  text not null,
    rule_count      int not null,
    created_at      timestamptz not null default now(),
    primary key (source_id, version)
);

create table knowledge_chunks (
    id          text primary key,
    api_key_id  text not null,
    source_id   text not null references knowledge_sources (id) on delete cascade,
    ordinal     int not null,
    text        text not null,
    unique (source_id, ordinal)
);
create index knowledge_chunks_tenant_idx on knowledge_chunks (api_key_id);

-- Each vector carries the model it was made with: search reads only the active model's.
create table knowledge_chunk_embeddings (
    chunk_id      text not null references knowledge_chunks (id) on delete cascade,
    model         text not null references embedding_models (name) on delete cascade,
    api_key_id    text not null,
    content_hash  text not null,
    embedding     vector not null,
    primary key (chunk_id, model)
);
create index knowledge_chunk_embeddings_scope_idx on knowledge_chunk_embeddings (model, api_key_id);

-- The current version's rules of a rule-based source (an update replaces them).
create table knowledge_rules (
    id          text primary key,
    api_key_id  text not null,
    source_id   text not null references knowledge_sources (id) on delete cascade,
    version     int not null,
    ordinal     int not null,
    content     text not null,
    category    text
);
create index knowledge_rules_source_idx on knowledge_rules (source_id, ordinal);

create table knowledge_rule_embeddings (
    rule_id       text not null references knowledge_rules (id) on delete cascade,
    model         text not null references embedding_models (name) on delete cascade,
    api_key_id    text not null,
    content_hash  text not null,
    embedding     vector not null,
    primary key (rule_id, model)
);
create index knowledge_rule_embeddings_scope_idx on knowledge_rule_embeddings (model, api_key_id);

-- Upload URLs minted by knowledge/upload-url: pending until the PUT, uploaded until ingested (a day at most),
-- then ingested: the bytes moved to the source, the row kept so that a second ingest of the ref is refused.
create table knowledge_uploads (
    id               text primary key,
    api_key_id       text not null references api_keys (id) on delete cascade,
    organization_id  text,
    document_id      text,
    mime_type        text not null,
    file_name        text,
    declared_size    int not null,
    content          bytea,
    status           text not null default 'pending' check (status in ('pending', 'uploaded', 'ingested')),
    expires_at       timestamptz not null,
    created_at       timestamptz not null default now()
);
create index knowledge_uploads_tenant_idx on knowledge_uploads (api_key_id, status, expires_at);
