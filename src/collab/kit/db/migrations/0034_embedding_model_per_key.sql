-- Embedding models as a choice per API key (ADR 0062). A key searches with its own model, or, where it has chosen
-- none, with the deployment's active one; while a re-embed fills another model for it, new judgments are embedded
-- with that one too (`embedding_model_next`, or `filling` on the registry for every key that follows the default).

alter table embedding_models add column filling boolean not null default false;
alter table api_keys
    add column embedding_model      text references embedding_models (name),
    add column embedding_model_next text references embedding_models (name);

-- A re-embed: one model over one key's judgments or every key's, split into ranges of (api_key_id, id) that any
-- worker takes from the bulk lane; each range keeps its cursor, so a stopped or killed run resumes where it was.
create table reembed_runs (
    id          text primary key,
    model       text not null references embedding_models (name),
    api_key_id  text references api_keys (id) on delete cascade,
    kinds       text[] not null,
    batch_size  int not null check (batch_size between 1 and 4096),
    activate    boolean not null,
    state       text not null check (state in ('running', 'stopped', 'finishing', 'done', 'failed')),
    total       int not null,
    resumed     int not null default 0,
    knowledge   int,
    error       text,
    created_at  timestamptz not null default now(),
    finished_at timestamptz
);
create unique index reembed_runs_one_live on reembed_runs (model, coalesce(api_key_id, ''))
    where state in ('running', 'stopped', 'finishing');

create table reembed_ranges (
    run_id      text not null references reembed_runs (id) on delete cascade,
    seq         int not null,
    after_key   text not null,
    after_id    text not null,
    upto_key    text not null,
    upto_id     text not null,
    cursor_key  text,
    cursor_id   text,
    judgments   int not null default 0,
    embedded    int not null default 0,
    done        boolean not null default false,
    worker      text,
    updated_at  timestamptz not null default now(),
    primary key (run_id, seq)
);
