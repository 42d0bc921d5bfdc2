-- name: insert_notification
-- Record a notification; nothing when its id exists.
insert into notifications (api_key_id, id, organization_id, document_id, location_id, notification_source,
                           notification_source_data, action_user, display_body_message,
                           display_headline_message_template, display_headline_message_template_data,
                           notify_users, notify_users_by_user_id, visible_to, "timestamp", created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(document_id)s, %(location_id)s, %(notification_source)s,
        %(notification_source_data)s, %(action_user)s, %(display_body_message)s,
        %(display_headline_message_template)s, %(display_headline_message_template_data)s,
        %(notify_users)s, %(notify_users_by_user_id)s, %(visible_to)s, %(timestamp)s, %(timestamp)s, %(timestamp)s)
on conflict do nothing
returning id

-- name: audience
-- Users with live access to the document (organization, folder chain, document; direct or via a group),
-- or, without a document, the organization's own users. A disabled organization has no audience.
with recursive chain as (
    select d.folder_id as id from documents d
    where d.api_key_id = %(api_key_id)s and d.organization_id = %(organization_id)s
      and d.id = %(document_id)s and d.folder_id is not null
  union
    select f.parent_id from folders f join chain c on f.id = c.id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s and f.parent_id is not null
), live as (
    select g.principal_type, g.principal_id from grants g
    join organizations o on o.api_key_id = g.api_key_id and o.id = g.organization_id and not o.disabled
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
      and (g.resource_type = 'organization'
           or (g.resource_type = 'document' and g.resource_id = %(document_id)s)
           or (g.resource_type = 'folder' and g.resource_id in (select id from chain)))
)
select principal_id as user_id from live where principal_type = 'user'
union
select m.user_id from live l
join group_members m on m.api_key_id = %(api_key_id)s and m.organization_id = %(organization_id)s
 and m.group_id = l.principal_id
where l.principal_type = 'group'

-- name: profiles
-- The name and e-mail of some users.
select id, name, email from users where api_key_id = %(api_key_id)s and id = any(%(ids)s)

-- name: list_notifications
-- A page by key (at most `limit` rows, taken by a top-N sort or the index), then only the rows that start within
-- `budget` bytes by a cheap estimate (the sizes as stored, a compressed JSON value counted 10 times: nothing is
-- read out of TOAST or rendered), so the API never loads much more than the budget; `fetched` is how many rows
-- the page had by key. The exact cut is made on the records as rendered (kit/paging.py).
with page as (
    select id, "timestamp",
           octet_length(id) + coalesce(octet_length(display_body_message), 0)
           + coalesce(octet_length(display_headline_message_template), 0) + pg_column_size(read_by)
           + (select coalesce(sum(pg_column_size(v) * case when pg_column_compression(v) is null then 1 else 10 end), 0)
              from (values (notification_source_data), (action_user), (display_headline_message_template_data),
                           (notify_users), (notify_users_by_user_id)) j(v)) as bytes
    from notifications
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
      and (%(document_id)s::text is null or document_id = %(document_id)s)
      and (%(location_id)s::text is null or location_id = %(location_id)s)
      and (%(user_id)s::text is null
           or (notify_users_by_user_id @> jsonb_build_object(%(user_id)s::text, true)
               and (visible_to is null or %(user_id)s = any(visible_to))))
      and (%(ids)s::text[] is null or id = any(%(ids)s))
      and (%(after_ts)s::bigint is null
           or (%(desc)s and ("timestamp", id) < (%(after_ts)s, %(after_id)s))
           or (not %(desc)s and ("timestamp", id) > (%(after_ts)s, %(after_id)s)))
    order by case when %(desc)s then "timestamp" end desc, case when %(desc)s then id end desc,
             case when not %(desc)s then "timestamp" end asc, case when not %(desc)s then id end asc
    limit %(limit)s
), sized as (
    -- Numbered after the limit: a window over the whole match would turn the top-N sort into a full sort.
    select id, n, count(*) over () as fetched, sum(bytes) over (order by n) - bytes as before
    from (select id, bytes, row_number() over (order by
                     case when %(desc)s then "timestamp" end desc, case when %(desc)s then id end desc,
                     case when not %(desc)s then "timestamp" end asc, case when not %(desc)s then id end asc) as n
          from page) p
)
select x.*, s.fetched from sized s
-- By key, row by row (offset 0 keeps the planner from trading the index for a scan of the tenant's rows).
cross join lateral (select * from notifications x where x.api_key_id = %(api_key_id)s and x.id = s.id offset 0) x
where s.before < %(budget)s
order by s.n

-- name: update_notification
-- Change a notification's messages or source data (null keeps them) and add readers.
update notifications set
    display_headline_message_template = coalesce(%(display_headline_message_template)s, display_headline_message_template),
    display_headline_message_template_data = coalesce(%(display_headline_message_template_data)s,
                                                      display_headline_message_template_data),
    display_body_message = coalesce(%(display_body_message)s, display_body_message),
    notification_source_data = coalesce(%(notification_source_data)s, notification_source_data),
    visible_to = case when %(notification_source_data)s::jsonb is null then visible_to else %(visible_to)s end,
    read_by = array(select distinct unnest(read_by || coalesce(%(read_by)s, '{}'::text[])) order by 1),
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning id

-- name: delete_notifications
-- Delete a document's or an organization's notifications (or only some ids); the ids deleted.
delete from notifications
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(document_id)s::text is null or document_id = %(document_id)s)
  and (%(ids)s::text[] is null or id = any(%(ids)s))
returning id

-- name: open_batch
-- Open a batch for a batch key; nothing when one is open already.
insert into notification_batches (api_key_id, id, organization_id, document_id, batch_key, recipient, max_size,
                                  opened_at, due_at)
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(document_id)s, %(batch_key)s, %(recipient)s, %(max_size)s,
        %(now)s, %(due_at)s)
on conflict (api_key_id, batch_key) where status = 'open' do nothing

-- name: lock_open_batch
-- The open batch of a batch key, locked while an item joins it.
select * from notification_batches
where api_key_id = %(api_key_id)s and batch_key = %(batch_key)s and status = 'open'
for update

-- name: add_item
-- Add an activity to a batch; nothing when it is there already.
insert into notification_batch_items (api_key_id, batch_id, activity_id, organization_id, document_id, action_type,
                                      action_user, entity_data, recipients, visible_to, created_at)
values (%(api_key_id)s, %(batch_id)s, %(activity_id)s, %(organization_id)s, %(document_id)s, %(action_type)s,
        %(action_user)s, %(entity_data)s, %(recipients)s, %(visible_to)s, %(now)s)
on conflict do nothing
returning activity_id

-- name: grow_batch
-- A batch that reaches its size closes and falls due now (plus any delay).
update notification_batches set
    size = size + 1,
    status = case when size + 1 >= max_size then 'closed' else status end,
    due_at = case when size + 1 >= max_size then %(closed_due_at)s else due_at end
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: due_batches
-- Due batches taken in turns (every key's oldest before any key's second, so one key's backlog cannot starve
-- the others); locked, so concurrent flushes skip them.
select b.* from notification_batches b
join (select api_key_id, id, row_number() over (partition by api_key_id order by due_at, id) as turn
      from notification_batches
      where status in ('open', 'closed') and due_at <= %(now)s
        and (%(api_key_id)s::text is null or api_key_id = %(api_key_id)s)) r
  using (api_key_id, id)
where b.status in ('open', 'closed') and b.due_at <= %(now)s
order by r.turn, b.due_at
limit %(limit)s
for update of b skip locked

-- name: batch_items
-- A batch's activities, in the order they came.
select * from notification_batch_items
where api_key_id = %(api_key_id)s and batch_id = %(batch_id)s
order by created_at, activity_id

-- name: mark_flushed
-- Close a batch for good, with the notification it became.
update notification_batches set status = 'flushed', notification_id = %(notification_id)s
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: forget_created
-- User-data deletion, in four statements (one row must not be changed twice in one statement).
delete from notifications
where api_key_id = %(api_key_id)s and action_user ->> 'userId' = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: forget_pending
-- User-data deletion: batched activities the users performed.
delete from notification_batch_items
where api_key_id = %(api_key_id)s and action_user ->> 'userId' = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: untag_pending
-- User-data deletion: the users no longer recipients of batched activities.
update notification_batch_items
set recipients = array(select r from unnest(recipients) as r where r <> all(%(user_ids)s))
where api_key_id = %(api_key_id)s and recipients && %(user_ids)s::text[]
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: untag_notifications
-- User-data deletion: the users no longer notified by, readers of, or shown notifications.
update notifications
set notify_users_by_user_id = notify_users_by_user_id - %(user_ids)s::text[],
    notify_users = notify_users - %(user_keys)s::text[],
    read_by = array(select r from unnest(read_by) as r where r <> all(%(user_ids)s)),
    visible_to = case when visible_to is null then null
                      else array(select v from unnest(visible_to) as v where v <> all(%(user_ids)s)) end
where api_key_id = %(api_key_id)s
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
  and (notify_users_by_user_id ?| %(user_ids)s::text[] or notify_users ?| %(user_keys)s::text[]
       or read_by && %(user_ids)s::text[])

-- name: fail_batch
-- A batch whose flush raised: due again later, or `failed` with the reason after its last try.
update notification_batches set
    attempts = attempts + 1, error = %(error)s,
    status = case when attempts + 1 >= %(max_attempts)s then 'failed' else status end,
    due_at = case when attempts + 1 >= %(max_attempts)s then due_at else %(retry_at)s end
where api_key_id = %(api_key_id)s and id = %(id)s
