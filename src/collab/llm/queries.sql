-- name: usage
-- What a workspace used of the platform's keys on one UTC day.
select calls, tokens from platform_key_usage where workspace_id = %(workspace_id)s and day = %(day)s

-- name: add_usage
-- Count model calls and tokens made on the platform's keys for a workspace's day; the day's totals.
insert into platform_key_usage (workspace_id, day, calls, tokens)
values (%(workspace_id)s, %(day)s, %(calls)s, %(tokens)s)
on conflict (workspace_id, day) do update
set calls = platform_key_usage.calls + excluded.calls, tokens = platform_key_usage.tokens + excluded.tokens
returning calls, tokens

-- name: drop_past_days
-- Delete up to `limit` counters of days before `before` (only the current day's are ever read).
delete from platform_key_usage
where ctid = any(array(select ctid from platform_key_usage where day < %(before)s limit %(limit)s))
