-- Fairness and failure hygiene: internal job failure detail, platform-key quota counters, and
-- knowledge-source bytes that a retention sweep may drop while keeping the row.

-- `jobs.error` is the reason a tenant may read; the exception text (driver DETAIL, provider messages) stays here.
alter table jobs add column error_detail text;

-- Model calls made on the platform's own provider keys, per workspace and UTC day (quota, 0 = off).
create table platform_key_usage (
    workspace_id  text not null,
    day           date not null,
    calls         int not null default 0,
    tokens        bigint not null default 0,
    primary key (workspace_id, day)
);

-- Retention drops the uploaded bytes of old sources (COLLAB_KNOWLEDGE_SOURCE_RETENTION_DAYS); the rest stays.
alter table knowledge_sources alter column content drop not null;
alter table knowledge_sources add column content_dropped_at timestamptz;
create index knowledge_sources_content_age_idx on knowledge_sources (created_at) where content is not null;
