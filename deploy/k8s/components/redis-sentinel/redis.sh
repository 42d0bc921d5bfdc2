#!/bin/sh
# Start this pod's Redis as a replica of the master the Sentinels name, or as the master itself. On the very first
# start no Sentinel answers yet and redis-0 is the master; after a failover a restarted pod asks and follows.
set -eu
me="$(hostname).redis"
master=""
for peer in redis-0.redis redis-1.redis redis-2.redis; do
  master="$(timeout 2 redis-cli -h "$peer" -p 26379 sentinel get-master-addr-by-name mymaster 2>/dev/null | head -n 1 || true)"
  if [ -n "$master" ]; then break; fi
done
if [ -z "$master" ]; then master=redis-0.redis; fi
# AOF every second and noeviction, as in deploy/compose: a full Redis refuses writes rather than drop queued jobs.
# Announce the pod's name, not its address: the address changes when the pod is replaced.
set -- --dir /data --appendonly yes --appendfsync everysec --maxmemory-policy noeviction --replica-announce-ip "$me"
if [ "$master" != "$me" ]; then set -- "$@" --replicaof "$master" 6379; fi
exec redis-server "$@"
