#!/bin/sh
# Start this pod's Sentinel from the shared sentinel.conf, with COLLAB_REDIS_MASTER put in as in deploy/compose:
# the master another Sentinel names, else redis-0. Sentinel rewrites its file, so it runs from a writable copy.
set -eu
me="$(hostname).redis"
master=""
for peer in redis-0.redis redis-1.redis redis-2.redis; do
  if [ "$peer" = "$me" ]; then continue; fi
  master="$(timeout 2 redis-cli -h "$peer" -p 26379 sentinel get-master-addr-by-name mymaster 2>/dev/null | head -n 1 || true)"
  if [ -n "$master" ]; then break; fi
done
if [ -z "$master" ]; then master=redis-0.redis; fi
# Sentinel refuses a master whose name does not resolve yet (a pod still being scheduled).
until getent hosts "$master" > /dev/null; do sleep 1; done
COLLAB_REDIS_MASTER="$master 6379"
sed "s|\${COLLAB_REDIS_MASTER}|${COLLAB_REDIS_MASTER}|" /etc/collab/sentinel.conf > /sentinel/sentinel.conf
# Pod addresses change when a pod is replaced: announce and report names instead.
printf 'sentinel announce-hostnames yes\nsentinel announce-ip %s\n' "$me" >> /sentinel/sentinel.conf
exec redis-sentinel /sentinel/sentinel.conf
