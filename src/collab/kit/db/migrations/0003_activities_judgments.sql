-- The activity log, judgments derived from it, and their embeddings per (model, kind).
create table activities (
    api_key_id                     text not null references api_keys (id) on delete cascade,
    id                             text not null,
    organization_id                text not null,
    document_id                    text,
    feature_type                   text not null,
    action_type                    text not null,
    action_user                    jsonb not null,
    target_entity_id               text,
    target_sub_entity_id           text,
    changes                        jsonb,
    entity_data                    jsonb,
    entity_target_data             jsonb,
    display_message_template       text,
    display_message_template_data  jsonb,
    action_icon                    text,
    is_activity_resolver_used      boolean not null default false,
    "timestamp"                    bigint not null,
    created_at                     timestamptz not null default now(),
    updated_at                     timestamptz not null default now(),
    primary key (api_key_id, id)
);
create index activities_document_idx on activities (api_key_id, organization_id, document_id, "timestamp" desc);
create index activities_target_idx on activities (api_key_id, organization_id, target_entity_id);

create table judgments (
    api_key_id       text not null,
    id               text not null,
    organization_id  text not null,
    document_id      text,
    annotation_id    text,
    decision         text not null,
    judge_type       text not null check (judge_type in ('human', 'agent')),
    reasoning        text not null,
    content          text,
    content_type     text,
    reviewer_id      text,
    confidence       double precision not null,
    action_user      jsonb not null,
    agent            jsonb,
    created_at       bigint not null,
    primary key (api_key_id, id),
    foreign key (api_key_id, id) references activities (api_key_id, id) on delete cascade
);
create index judgments_scope_idx on judgments (api_key_id, organization_id, document_id, created_at desc);
create index judgments_annotation_idx on judgments (api_key_id, organization_id, annotation_id, created_at);
create index judgments_recency_idx on judgments (api_key_id, created_at desc);

-- One registered model is active for search; a re-embed fills a new model's rows beside the old ones.
create table embedding_models (
    name        text primary key,
    source      text not null,
    dimensions  int not null check (dimensions > 0),
    active      boolean not null default false,
    created_at  timestamptz not null default now()
);
create unique index embedding_models_one_active on embedding_models ((true)) where active;

create table judgment_embeddings (
    api_key_id       text not null,
    judgment_id      text not null,
    kind             text not null check (kind in ('review', 'content')),
    model            text not null references embedding_models (name) on delete cascade,
    content_hash     text not null,
    organization_id  text not null,
    document_id      text,
    embedding        vector not null,
    primary key (api_key_id, judgment_id, kind, model),
    foreign key (api_key_id, judgment_id) references judgments (api_key_id, id) on delete cascade
);
-- Scoped exact search reads this btree; HNSW indexes are made per (model, kind) when a model is registered.
create index judgment_embeddings_scope_idx on judgment_embeddings (model, kind, api_key_id, organization_id, document_id);
