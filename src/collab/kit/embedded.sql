-- name: database_exists
-- Whether the embedded server has the service's database yet.
select 1 from pg_database where datname = %(database)s

-- name: create_database
-- The service's database on first start (a template: database is an identifier).
create database {database}
