-- name: lock_models
-- Serialise model registration across processes for the rest of the transaction.
select pg_advisory_xact_lock(hashtext('collab:embedding_models'))

-- name: upsert_model
-- Record an embedding model, or change where a known one loads from.
insert into embedding_models (name, source, dimensions) values (%(model)s, %(source)s, %(dimensions)s)
on conflict (name) do update set source = excluded.source

-- name: activate_if_none
-- Make the model active when no model is (the first one registered).
update embedding_models set active = true where name = %(model)s
  and not exists (select 1 from embedding_models where active)

-- name: index_build_memory
-- Room to sort in memory for this transaction's index builds (a bulk build is ~2.6x faster, DESIGN.md §8).
select set_config('maintenance_work_mem', '1GB', true)

-- name: create_hnsw_index
-- The HNSW (cosine) index of one model and kind (a template; registry.py fills it with psycopg.sql).
create index if not exists {index} on judgment_embeddings using hnsw ({vector} {ops})
with (m = 16, ef_construction = 64) where model = {model} and kind = {kind}

-- name: drop_index
-- An index the model no longer needs (a template).
drop index if exists {index}

-- name: existing_indexes
-- Which of these index names exist.
select relname from pg_class where relkind = 'i' and relname = any(%(names)s)

-- name: pgvector_version
-- The installed pgvector's version string (no row when the extension is missing).
select extversion from pg_extension where extname = 'vector'

-- name: active_model
-- The model search uses.
select name, source, dimensions from embedding_models where active

-- name: model_dimensions
-- A registered model's dimensions.
select dimensions from embedding_models where name = %(model)s

-- name: deactivate_others
-- Every other model stops being the active one.
update embedding_models set active = false where active and name <> %(model)s

-- name: activate
-- The model becomes the active one.
update embedding_models set active = true where name = %(model)s
