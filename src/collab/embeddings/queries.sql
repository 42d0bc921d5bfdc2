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
-- Room to sort in memory for this transaction's index builds (a bulk build is ~2.6x faster, DESIGN.md §8), and no
-- statement time limit for them (a million rows take minutes).
select set_config('maintenance_work_mem', '1GB', true), set_config('statement_timeout', '0', true)

-- name: create_hnsw_index
-- The HNSW (cosine) index of one model and kind (a template; registry.py fills it with psycopg.sql, `concurrently`
-- included or not, and says why ef_construction is 128).
create index {concurrently} if not exists {index} on judgment_embeddings using hnsw ({vector} {ops})
with (m = 16, ef_construction = 128) where model = {model} and kind = {kind}

-- name: drop_index
-- An index the model no longer needs, or a concurrent build's invalid leftover (a template).
drop index {concurrently} if exists {index}

-- name: existing_indexes
-- Which of these index names exist, and whether each is valid (a concurrent build that failed leaves an invalid
-- one, which no query uses).
select c.relname, i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid
where c.relkind = 'i' and c.relname = any(%(names)s)

-- name: try_upgrade_lock
-- Whether this session now holds the index upgrade (one process at a time; kept until unlocked or disconnected).
select pg_try_advisory_lock(hashtext('collab:index_upgrade')) as held

-- name: upgrade_unlock
-- Let the index upgrade go.
select pg_advisory_unlock(hashtext('collab:index_upgrade'))

-- name: session_build_memory
-- Room to sort in memory for this session's concurrent index builds, and no statement time limit (reset after them).
select set_config('maintenance_work_mem', '1GB', false), set_config('statement_timeout', '0', false)

-- name: reset_build_memory
-- The pooled session's maintenance_work_mem and statement time limit back to what RESET gives: the server's, the
-- pool's.
select set_config(name, reset_val, false) from pg_settings where name in ('maintenance_work_mem', 'statement_timeout')

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

-- name: key_models
-- The model a key searches with (its own choice, else the active one) and the one a re-embed is filling for it,
-- if any (its own, or, for a key that follows the active model, the one filled for every such key).
select coalesce(km.name, a.name) as model, coalesce(km.source, a.source) as source,
       coalesce(km.dimensions, a.dimensions) as dimensions,
       n.name as next, n.source as next_source, n.dimensions as next_dimensions
from (select 1) as one
left join api_keys k on k.id = %(api_key_id)s
left join embedding_models km on km.name = k.embedding_model
left join embedding_models a on a.active
left join embedding_models n on n.name = coalesce(
    k.embedding_model_next, case when k.embedding_model is null then
        (select f.name from embedding_models f where f.filling order by f.name limit 1) end)

-- name: models
-- Every registered model, the active one first.
select name, source, dimensions, active, filling,
       (select count(*) from api_keys k where k.embedding_model = m.name) as keys
from embedding_models m order by active desc, name

-- name: model_row
-- One registered model.
select name, source, dimensions, active, filling from embedding_models where name = %(model)s

-- name: set_key_model
-- A key searches with this model from now on (null: the active one), and nothing is being filled for it.
update api_keys set embedding_model = %(model)s, embedding_model_next = null where id = %(api_key_id)s

-- name: set_key_next
-- New judgments of the key are embedded with this model too while a re-embed fills it (null: no longer).
update api_keys set embedding_model_next = %(model)s where id = %(api_key_id)s

-- name: set_filling
-- New judgments of every key that follows the active model are embedded with this one too (or no longer).
update embedding_models set filling = (name = %(model)s and %(filling)s) where filling or name = %(model)s
