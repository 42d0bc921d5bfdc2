-- name: database_exists
-- Whether the embedded server has the service's database yet.
select 1 from pg_database where datname = %(database)s

-- name: create_database
-- The service's database on first start (a template: database is an identifier).
create database {database}

-- name: vector_outdated
-- Whether the database's pgvector is older than the one the server bundles (a data directory from an earlier package).
select 1 from pg_extension e join pg_available_extensions a on a.name = e.extname
where e.extname = 'vector' and e.extversion <> a.default_version

-- name: update_vector
-- Bring the database's pgvector to the bundled version (its upgrade scripts ship with the server).
alter extension vector update
