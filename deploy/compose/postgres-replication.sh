#!/bin/sh
# compose.ha.yaml: run once by the postgres image when the primary's data directory is created
# (docker-entrypoint-initdb.d). Creates the role the standby's base backup and WAL stream connect as, and lets it
# connect for replication from the compose network.
set -eu
psql -v ON_ERROR_STOP=1 -v pw="$POSTGRES_REPLICATION_PASSWORD" --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
create role replicator with replication login password :'pw';
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
