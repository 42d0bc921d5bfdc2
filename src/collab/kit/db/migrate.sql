-- name: lock
-- One migrator at a time across replicas (a session lock: it spans the migrations' own transactions).
select pg_advisory_lock(%(lock)s)

-- name: unlock
-- Let the next migrator in.
select pg_advisory_unlock(%(lock)s)

-- name: create_ledger
-- The ledger of applied migrations, created on the first run.
create table if not exists schema_migrations (
    version int primary key, name text not null, applied_at timestamptz not null default now()
)

-- name: applied
-- The versions applied so far.
select version from schema_migrations

-- name: record
-- Note a migration as applied (in the transaction that applied it).
insert into schema_migrations (version, name) values (%(version)s, %(name)s)

-- name: ledger_exists
-- Whether the ledger exists (a database never migrated has none).
select to_regclass('schema_migrations') is not null as present

-- name: current_version
-- The highest applied migration, 0 when none.
select coalesce(max(version), 0) as v from schema_migrations
