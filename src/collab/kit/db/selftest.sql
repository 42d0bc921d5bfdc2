-- name: versions
-- The server's version and the pgvector a database has, or else the one it would install (null: none available).
select current_setting('server_version') as server_version,
  (select extversion from pg_extension where extname = 'vector') as installed,
  (select default_version from pg_available_extensions where name = 'vector') as available

-- name: lock
-- One self-test at a time across processes and replicas: a crash must not be repeated by every process at once.
select pg_advisory_lock(7340002)

-- name: known_failure
-- A failure recorded for this server and pgvector version by an earlier start.
select statement, detail, failed_at from vector_self_test_failures
where server_version = %(server_version)s and vector_version = %(vector_version)s

-- name: record_failure
-- Remember that the vector statements killed their backend on this server and pgvector version.
insert into vector_self_test_failures (server_version, vector_version, statement, detail)
values (%(server_version)s, %(vector_version)s, %(statement)s, %(detail)s)
on conflict (server_version, vector_version) do update
set statement = excluded.statement, detail = excluded.detail, failed_at = now()

-- name: forget_failures
-- Clear recorded failures (`collab selftest` after the server or its pgvector was fixed).
delete from vector_self_test_failures

-- name: create_table
-- A throwaway table (the transaction is rolled back) of 384-dimension vectors, the service's embedding size.
create temp table collab_vector_check (id int primary key, e vector(384))

-- name: create_index
-- The HNSW cosine index the service builds on full-precision vectors.
create index on collab_vector_check using hnsw (e vector_cosine_ops) with (m = 16, ef_construction = 128)

-- name: create_half_index
-- The HNSW index on the half-precision expression the service builds from pgvector 0.7.
create index on collab_vector_check using hnsw ((e::halfvec(384)) halfvec_cosine_ops) with (m = 16, ef_construction = 128)

-- name: insert_vectors
-- 64 distinct vectors, inserted through both indexes (where pgvector built for another CPU dies: SIGILL).
insert into collab_vector_check
select i, (select array_agg(sin(i * d)) from generate_series(1, 384) d)::vector(384) from generate_series(1, 64) i

-- name: index_scans_only
-- Make the searches below read the indexes, as the service's do.
set enable_seqscan = off

-- name: iterative_scan
-- pgvector 0.8's iterative index scan, which the service's filtered searches use.
set hnsw.iterative_scan = relaxed_order

-- name: nearest
-- The nearest rows to row 7 by cosine distance through the full-precision index (row 7 first).
select id, e <=> (select e from collab_vector_check where id = 7) as distance from collab_vector_check
order by e <=> (select e from collab_vector_check where id = 7) limit 3

-- name: nearest_half
-- The same through the half-precision index.
select id from collab_vector_check
order by e::halfvec(384) <=> (select e::halfvec(384) from collab_vector_check where id = 7) limit 3
