-- name: lock_api_key
-- Serialise endpoint creation per API key (the endpoint cap) for the rest of the transaction.
select id from api_keys where id = %(api_key_id)s for update

-- name: count_endpoints
-- How many webhook endpoints an API key has.
select count(*) as n from webhook_endpoints where api_key_id = %(api_key_id)s and kind = 'advanced'

-- name: insert_endpoint
-- Create a webhook endpoint; the stored row.
insert into webhook_endpoints (api_key_id, id, url, description, filter_types, channels, disabled, rate_limit, uid,
                               metadata, secret_enc, created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(url)s, %(description)s, %(filter_types)s, %(channels)s, %(disabled)s,
        %(rate_limit)s, %(uid)s, %(metadata)s, %(secret_enc)s, %(now)s, %(now)s)
returning *

-- name: get_endpoint
-- An endpoint by its id or its uid.
select * from webhook_endpoints
where api_key_id = %(api_key_id)s and (id = %(ref)s or uid = %(ref)s) and kind = 'advanced'
order by (id = %(ref)s) desc
limit 1

-- name: list_endpoints
-- Keyset pages by (created_at, id): forward after a key, or backward before one (then reversed by the caller).
select * from webhook_endpoints
where api_key_id = %(api_key_id)s and kind = 'advanced'
  and (%(after_ts)s::bigint is null or (created_at, id) > (%(after_ts)s, %(after_id)s))
  and (%(before_ts)s::bigint is null or (created_at, id) < (%(before_ts)s, %(before_id)s))
order by case when %(backward)s then created_at end desc, case when %(backward)s then id end desc,
         case when not %(backward)s then created_at end asc, case when not %(backward)s then id end asc
limit %(limit)s

-- name: update_endpoint
-- Change only the flagged columns of an endpoint; the stored row.
update webhook_endpoints set
    url = case when %(set_url)s then %(url)s else url end,
    description = case when %(set_description)s then %(description)s else description end,
    filter_types = case when %(set_filter_types)s then %(filter_types)s else filter_types end,
    channels = case when %(set_channels)s then %(channels)s else channels end,
    disabled = case when %(set_disabled)s then %(disabled)s else disabled end,
    -- Switching an endpoint on again starts its failure clock afresh.
    disabled_reason = case when %(set_disabled)s then null else disabled_reason end,
    failing_since = case when %(set_disabled)s and not %(disabled)s then null else failing_since end,
    rate_limit = case when %(set_rate_limit)s then %(rate_limit)s else rate_limit end,
    uid = case when %(set_uid)s then %(uid)s else uid end,
    metadata = case when %(set_metadata)s then %(metadata)s else metadata end,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and kind = 'advanced'
returning *

-- name: delete_endpoint
-- Delete an endpoint (its deliveries and attempts go with it); its id when it existed.
delete from webhook_endpoints where api_key_id = %(api_key_id)s and id = %(id)s and kind = 'advanced' returning id

-- name: rotate_secret
-- Give an endpoint a new signing secret; the previous one stays valid until `until`.
update webhook_endpoints set
    previous_secret_enc = secret_enc, previous_secret_until = %(until)s, secret_enc = %(secret_enc)s,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and kind = 'advanced'

-- name: event_targets
-- Everything an event needs to find its endpoints, in one read: the key's webhook config (the basic service's
-- settings are in it), the enabled advanced endpoints that take the event type (and one of its channels; none while
-- advanced webhooks are off), and the basic service's endpoint rows as they stand.
select k.webhook_config,
       array(select e.id from webhook_endpoints e
             where e.api_key_id = k.id and coalesce((k.webhook_config ->> 'isEnabled')::boolean, false)
               and not e.disabled and e.kind = 'advanced'
               and (e.filter_types is null or %(event_type)s = any(e.filter_types))
               and (e.channels is null or e.channels && %(channels)s::text[])
             order by e.id) as advanced,
       coalesce((select json_agg(json_build_object('id', e.id, 'url', e.url, 'disabled', e.disabled))
                 from webhook_endpoints e where e.api_key_id = k.id and e.kind = 'basic'), '[]') as basic
from api_keys k where k.id = %(api_key_id)s

-- name: insert_message
-- Record a webhook message; nothing when its id exists (a repeated one-off event).
insert into webhook_messages (api_key_id, id, event_type, body, content_type, error, organization_id, user_ids,
                              created_at)
values (%(api_key_id)s, %(id)s, %(event_type)s, %(body)s, %(content_type)s, %(error)s, %(organization_id)s,
        %(user_ids)s, %(now)s)
on conflict do nothing
returning id

-- name: insert_delivery
-- Address a message to one endpoint, due now.
insert into webhook_deliveries (api_key_id, message_id, endpoint_id, status, max_attempts, due_at, last_error,
                                created_at, updated_at)
values (%(api_key_id)s, %(message_id)s, %(endpoint_id)s, %(status)s, %(max_attempts)s, %(now)s, %(last_error)s,
        %(now)s, %(now)s)

-- name: due_deliveries
-- Pending deliveries whose time has come, and sends whose job vanished past its lease, taken in turns (every
-- key's oldest before any key's second, so one key's backlog cannot starve the others); locked, so
-- concurrent sweeps skip each other's rows.
select d.api_key_id, d.message_id, d.endpoint_id, d.attempts, d.status, d.lost_leases from webhook_deliveries d
join (select api_key_id, message_id, endpoint_id,
             row_number() over (partition by api_key_id order by due_at, message_id, endpoint_id) as turn
      from webhook_deliveries
      where (status = 'pending' and due_at <= %(now)s) or (status = 'sending' and lease_until <= %(now)s)) r
  using (api_key_id, message_id, endpoint_id)
where (d.status = 'pending' and d.due_at <= %(now)s) or (d.status = 'sending' and d.lease_until <= %(now)s)
order by r.turn, d.due_at
limit %(limit)s
for update of d skip locked

-- name: queue_delivery
-- A send whose lease ran out counts as lost, so a job that never finishes is given up after a few.
update webhook_deliveries set status = 'queued', lease_until = null, updated_at = %(now)s,
    lost_leases = lost_leases + case when status = 'sending' then 1 else 0 end
where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s

-- name: claim_delivery
-- Take attempt number %(attempt)s of a queued delivery; a second run of the same job finds nothing.
update webhook_deliveries d set status = 'sending', lease_until = %(lease_until)s, updated_at = %(now)s
from webhook_endpoints e, webhook_messages m, api_keys k
where d.api_key_id = %(api_key_id)s and d.message_id = %(message_id)s and d.endpoint_id = %(endpoint_id)s
  and d.status = 'queued' and d.attempts = %(attempt)s - 1
  and e.api_key_id = d.api_key_id and e.id = d.endpoint_id and m.api_key_id = d.api_key_id and m.id = d.message_id
  and k.id = d.api_key_id
returning d.attempts, d.max_attempts, e.url, e.disabled, e.rate_limit, e.secret_enc, e.previous_secret_enc,
          e.previous_secret_until, m.body, m.content_type,
          case when e.kind = 'basic' then k.basic_webhook_token_enc end as basic_token_enc

-- name: reschedule_delivery
-- Back to pending without using up an attempt (rate limit).
update webhook_deliveries set status = 'pending', due_at = %(due_at)s, lease_until = null, updated_at = %(now)s
where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s
  and status = 'sending'

-- name: insert_attempt
-- Record one delivery attempt; nothing when that attempt was recorded already.
insert into webhook_attempts (api_key_id, message_id, endpoint_id, attempt, status_code, response, error,
                              duration_ms, at)
values (%(api_key_id)s, %(message_id)s, %(endpoint_id)s, %(attempt)s, %(status_code)s, %(response)s, %(error)s,
        %(duration_ms)s, %(now)s)
on conflict do nothing

-- name: finish_attempt
-- Move a delivery on after an attempt: succeeded, failed, or pending until due_at.
update webhook_deliveries set
    status = %(status)s, attempts = %(attempt)s, due_at = coalesce(%(due_at)s, due_at), lease_until = null,
    last_error = %(error)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s
  and status = 'sending' and attempts = %(attempt)s - 1

-- name: fail_delivery
-- Fail a delivery being sent, with the reason.
update webhook_deliveries set status = 'failed', lease_until = null, last_error = %(error)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s
  and status = 'sending'

-- name: endpoint_succeeded
-- An endpoint that answered is no longer failing.
update webhook_endpoints set failing_since = null
where api_key_id = %(api_key_id)s and id = %(id)s and failing_since is not null

-- name: endpoint_failed
-- Right-hand sides read the old row: failing_since is the first failure since the last success.
update webhook_endpoints set
    failing_since = coalesce(failing_since, %(now)s),
    disabled = disabled or %(gone)s or %(now)s - coalesce(failing_since, %(now)s) >= %(disable_after_ms)s,
    disabled_reason = case
        when disabled then disabled_reason
        when %(gone)s then 'The endpoint answered 410 Gone.'
        when %(now)s - coalesce(failing_since, %(now)s) >= %(disable_after_ms)s then 'Every delivery failed for 5 days.'
        else disabled_reason end,
    updated_at = case when not disabled and (%(gone)s or %(now)s - coalesce(failing_since, %(now)s) >= %(disable_after_ms)s)
                      then %(now)s else updated_at end
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: list_messages
-- Newest first; with an endpoint, only the messages addressed to it.
select m.id, m.event_type, m.created_at, m.error,
       array_agg(d.status order by d.endpoint_id) as statuses,
       min(d.due_at) filter (where d.status = 'pending') as next_attempt_at
from webhook_messages m
join webhook_deliveries d on d.api_key_id = m.api_key_id and d.message_id = m.id
 and (%(endpoint_id)s::text is null or d.endpoint_id = %(endpoint_id)s)
where m.api_key_id = %(api_key_id)s
  and (%(after_ts)s::bigint is null or (m.created_at, m.id) < (%(after_ts)s, %(after_id)s))
group by m.api_key_id, m.id
order by m.created_at desc, m.id desc
limit %(limit)s

-- name: list_attempts
-- The attempts of some messages (to one endpoint, when given), in order.
select * from webhook_attempts
where api_key_id = %(api_key_id)s and message_id = any(%(message_ids)s)
  and (%(endpoint_id)s::text is null or endpoint_id = %(endpoint_id)s)
order by message_id, at, endpoint_id, attempt

-- name: lock_delivery
-- A delivery with its endpoint's state and message body, locked for a manual retry.
select d.*, e.disabled, m.body from webhook_deliveries d
join webhook_endpoints e on e.api_key_id = d.api_key_id and e.id = d.endpoint_id
join webhook_messages m on m.api_key_id = d.api_key_id and m.id = d.message_id
where d.api_key_id = %(api_key_id)s and d.message_id = %(message_id)s and d.endpoint_id = %(endpoint_id)s
for update of d

-- name: requeue_delivery
-- A manual retry: one more attempt, now.
update webhook_deliveries set status = 'queued', max_attempts = attempts + 1, due_at = %(now)s, lease_until = null,
    last_error = null, updated_at = %(now)s
where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s

-- name: touch_crdt
-- Count an update of an editor's CRDT document in its open window, or open one due at due_at.
insert into webhook_crdt_pending (api_key_id, organization_id, document_id, editor_id, last_updated_by, first_at,
                                  last_at, due_at)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(editor_id)s, %(user_id)s, %(now)s, %(now)s,
        %(due_at)s)
on conflict (api_key_id, organization_id, document_id, editor_id) do update set
    updates = webhook_crdt_pending.updates + 1, last_at = excluded.last_at,
    last_updated_by = coalesce(excluded.last_updated_by, webhook_crdt_pending.last_updated_by)

-- name: due_crdt
-- Due CRDT windows, taken in turns per key like due_deliveries; locked, so concurrent sweeps skip them.
select c.* from webhook_crdt_pending c
join (select api_key_id, organization_id, document_id, editor_id,
             row_number() over (partition by api_key_id order by due_at, document_id, editor_id) as turn
      from webhook_crdt_pending where due_at <= %(now)s) r
  using (api_key_id, organization_id, document_id, editor_id)
where c.due_at <= %(now)s
order by r.turn, c.due_at
limit %(limit)s
for update of c skip locked

-- name: delete_crdt
-- Close a CRDT window once its event is recorded.
delete from webhook_crdt_pending
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s

-- name: forget_user
-- User-data deletion: the messages about these users go, with their deliveries and attempts.
delete from webhook_messages
where api_key_id = %(api_key_id)s and user_ids && %(user_ids)s::text[]
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: forget_crdt_user
-- User-data deletion: the users no longer show as the last updater of a pending CRDT window.
update webhook_crdt_pending set last_updated_by = null
where api_key_id = %(api_key_id)s and last_updated_by = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: give_up_delivery
-- The sweep stops a delivery it cannot move on: failed with its reason, which the key sees in the message log
-- as one last attempt without a status code.
with attempt as (
    insert into webhook_attempts (api_key_id, message_id, endpoint_id, attempt, status_code, response, error,
                                  duration_ms, at)
    select api_key_id, message_id, endpoint_id, attempts + 1, null, null, %(error)s, 0, %(now)s
    from webhook_deliveries
    where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s
    on conflict do nothing
)
update webhook_deliveries set status = 'failed', attempts = attempts + 1, lease_until = null, last_error = %(error)s,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and message_id = %(message_id)s and endpoint_id = %(endpoint_id)s

-- name: fail_crdt
-- A CRDT window whose event could not be recorded: due again later; the tries so far.
update webhook_crdt_pending set attempts = attempts + 1, due_at = %(retry_at)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s
returning attempts

-- name: put_basic_endpoint
-- Create a basic-service endpoint (unsigned: the service's auth token authenticates it) or point it at the
-- configured URL (only called when it is missing or points elsewhere); a changed URL starts its failure clock
-- afresh.
insert into webhook_endpoints (api_key_id, id, kind, url, created_at, updated_at)
values (%(api_key_id)s, %(id)s, 'basic', %(url)s, %(now)s, %(now)s)
on conflict (api_key_id, id) do update set
    url = excluded.url, disabled = false, disabled_reason = null, failing_since = null,
    updated_at = excluded.updated_at
where webhook_endpoints.kind = 'basic' and webhook_endpoints.url <> excluded.url

-- name: enable_basic_endpoints
-- The basic service configured again: endpoints the engine turned off for failing get another chance.
update webhook_endpoints set disabled = false, disabled_reason = null, failing_since = null, updated_at = %(now)s
where api_key_id = %(api_key_id)s and kind = 'basic' and disabled
