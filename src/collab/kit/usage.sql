-- name: add_counts
-- Add buffered per-minute counts (and histogram buckets, element-wise) to the stored ones; rows arrive sorted.
insert into usage_minutes as u (workspace_id, minute_ms, metric, label, count, buckets)
select r.workspace_id, r.minute_ms, r.metric, r.label, r.count, r.buckets::bigint[]
from unnest(%(workspace_ids)s::text[], %(minutes)s::bigint[], %(metrics)s::text[], %(labels)s::text[],
            %(counts)s::bigint[], %(buckets)s::text[])
     as r(workspace_id, minute_ms, metric, label, count, buckets)
order by 1, 2, 3, 4
on conflict (workspace_id, minute_ms, metric, label) do update
set count = u.count + excluded.count,
    buckets = case
        when excluded.buckets is null then u.buckets
        when u.buckets is null then excluded.buckets
        else array(select coalesce(a, 0) + coalesce(b, 0)
                   from unnest(u.buckets, excluded.buckets) with ordinality as t(a, b, i) order by i)
    end

-- name: key_workspaces
-- The workspace of each API key (counts recorded by key are stored by workspace).
select id, workspace_id from api_keys where id = any(%(ids)s::text[])

-- name: counts_by_slot
-- One workspace's counts in a window, summed per metric, label and chart bucket.
select metric, label, (minute_ms - %(since)s) / %(bucket_ms)s as slot, sum(count)::bigint as count
from usage_minutes
where workspace_id = %(workspace_id)s and minute_ms >= %(since)s and minute_ms < %(until)s
group by metric, label, slot

-- name: histogram
-- One workspace's latency histogram of a metric in a window, summed bucket by bucket.
select t.i::int as i, sum(t.n)::bigint as n
from usage_minutes u, unnest(u.buckets) with ordinality as t(n, i)
where u.workspace_id = %(workspace_id)s and u.metric = %(metric)s
  and u.minute_ms >= %(since)s and u.minute_ms < %(until)s and u.buckets is not null
group by t.i
order by t.i

-- name: drop_old
-- Delete up to `limit` counter rows of minutes before `before` (the retention sweep, in batches).
delete from usage_minutes
where ctid = any(array(select ctid from usage_minutes where minute_ms < %(before)s limit %(limit)s))
