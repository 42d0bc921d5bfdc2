-- name: insert_job
-- Record a queued job in the caller's transaction, marked sent: it is sent to the queue right after commit.
insert into jobs (id, api_key_id, function, args, enqueued_at) values (%(id)s, %(key)s, %(fn)s, %(args)s, now())

-- name: mark_enqueued
-- Note when the sweep sent jobs again (they wait a full sweep interval before the next try).
update jobs set enqueued_at = now() where id = any(%(ids)s)

-- name: mark_unsent
-- Note that jobs did not reach the queue after commit (Redis away, or none given); the sweep sends them.
update jobs set enqueued_at = null where id = any(%(ids)s)

-- name: start_job
-- Count a try of an unfinished job and move it to running; nothing when it finished already.
update jobs set status = 'running', attempts = attempts + 1, updated_at = now()
where id = %(id)s and status in ('queued', 'running')
returning args, attempts, api_key_id

-- name: finish_job
-- Record a job's outcome: its status, result, tenant-facing reason and internal detail; only by its latest try.
update jobs set status = %(status)s, result = %(result)s, error = %(error)s, error_detail = %(detail)s,
  updated_at = now()
where id = %(id)s and attempts = %(attempt)s and status = 'running'

-- name: hold_lease
-- Lock a running job's row for a write of its try: nothing when a later try has started (fencing.py).
select 1 as held from jobs where id = %(id)s and attempts = %(attempt)s and status = 'running' for update

-- name: unsent_jobs
-- Queued jobs not on the queue for a while (committed while Redis was away, or their send failed).
select id, function from jobs
where status = 'queued' and coalesce(enqueued_at, created_at) < now() - make_interval(secs => %(after)s)
order by created_at limit 500

-- name: stale_running_jobs
-- Running jobs unchanged for a while: candidates for "the queue lost them" (checked against Redis).
select id, function from jobs
where status = 'running' and updated_at < now() - make_interval(secs => %(after)s)
order by updated_at limit 500

-- name: count_connection_loss
-- Count a try whose database connection was lost (a crashed or restarted server); the total so far.
update jobs set connection_losses = connection_losses + 1, updated_at = now() where id = %(id)s
returning connection_losses
