-- name: unfinished_jobs
-- A tenant's jobs still queued or running (settle_webhooks waits for each).
select id from jobs where api_key_id = %(api_key_id)s and status in ('queued', 'running')

-- name: webhook_work_left
-- A tenant's deliveries under way or due, then its CRDT windows due (settled when both are 0).
select count(*) as n from webhook_deliveries
where api_key_id = %(api_key_id)s and (status in ('queued', 'sending') or (status = 'pending' and due_at <= %(now)s))
union all
select count(*) from webhook_crdt_pending where api_key_id = %(api_key_id)s and due_at <= %(now)s
