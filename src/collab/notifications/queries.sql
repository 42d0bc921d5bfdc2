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

-- name: update_matching
-- Velt's update without ids: change every notification of the organization that the filters match (at most
-- `limit`), readers added; the ids changed.
update notifications set
    display_headline_message_template = coalesce(%(display_headline_message_template)s, display_headline_message_template),
    display_headline_message_template_data = coalesce(%(display_headline_message_template_data)s,
                                                      display_headline_message_template_data),
    display_body_message = coalesce(%(display_body_message)s, display_body_message),
    notification_source_data = coalesce(%(notification_source_data)s, notification_source_data),
    action_user = coalesce(%(action_user)s, action_user),
    visible_to = case when %(notification_source_data)s::jsonb is null then visible_to else %(visible_to)s end,
    read_by = array(select distinct unnest(read_by || coalesce(%(read_by)s, '{}'::text[])) order by 1),
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(id)s::text is null or id = %(id)s)
  and (%(document_id)s::text is null or document_id = %(document_id)s)
  and (%(location_id)s::text is null or location_id = %(location_id)s)
  and (%(user_id)s::text is null or notify_users_by_user_id ? %(user_id)s)
  and id in (select id from notifications
             where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
               and (%(id)s::text is null or id = %(id)s)
               and (%(document_id)s::text is null or document_id = %(document_id)s)
               and (%(location_id)s::text is null or location_id = %(location_id)s)
               and (%(user_id)s::text is null or notify_users_by_user_id ? %(user_id)s)
             order by id limit %(limit)s)
returning id

-- name: delete_matching
-- Delete the notifications the filters match (document, location, ids); with a user, only those that notify them.
delete from notifications
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(document_id)s::text is null or document_id = %(document_id)s)
  and (%(location_id)s::text is null or location_id = %(location_id)s)
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and (%(user_id)s::text is null
       or (notify_users_by_user_id ? %(user_id)s and notify_users_by_user_id - %(user_id)s::text = '{}'::jsonb))
returning id

-- name: untag_matching
-- A user's delete of notifications other users also have: the user leaves them (the others keep theirs).
update notifications
set notify_users_by_user_id = notify_users_by_user_id - %(user_id)s::text,
    notify_users = notify_users - %(user_keys)s::text[],
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(document_id)s::text is null or document_id = %(document_id)s)
  and (%(location_id)s::text is null or location_id = %(location_id)s)
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and notify_users_by_user_id ? %(user_id)s
returning id

-- name: preferences
-- The stored preferences of some users in an organization: its own level ('') and the given documents.
select user_id, document_id, inbox, email, slack from notification_preferences
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and user_id = any(%(user_ids)s)
  and document_id = any(%(document_ids)s)

-- name: set_preferences
-- Set some channels of users at some levels, every user at every level in one statement (null keeps a channel as
-- it was).
insert into notification_preferences (api_key_id, organization_id, user_id, document_id, inbox, email, slack,
                                      updated_at)
select %(api_key_id)s, %(organization_id)s, u, d, %(inbox)s, %(email)s, %(slack)s, %(now)s
from unnest(%(user_ids)s::text[]) as u cross join unnest(%(document_ids)s::text[]) as d
on conflict (api_key_id, organization_id, user_id, document_id) do update set
    inbox = coalesce(excluded.inbox, notification_preferences.inbox),
    email = coalesce(excluded.email, notification_preferences.email),
    slack = coalesce(excluded.slack, notification_preferences.slack),
    updated_at = excluded.updated_at

-- name: email_off
-- Unsubscribe: the user's e-mail channel off in the organization, document-level e-mail choices cleared.
with org as (
    insert into notification_preferences (api_key_id, organization_id, user_id, document_id, email, updated_at)
    values (%(api_key_id)s, %(organization_id)s, %(user_id)s, '', 'NONE', %(now)s)
    on conflict (api_key_id, organization_id, user_id, document_id) do update set
        email = 'NONE', updated_at = excluded.updated_at
)
update notification_preferences set email = null, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and user_id = %(user_id)s
  and document_id <> ''

-- name: cancel_emails
-- A user who turned e-mail off gets none of the e-mails still waiting for them; one being sent now is not retried
-- (its send job finds it cancelled and records nothing over it).
update notification_emails set status = 'cancelled', last_error = %(reason)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and user_id = any(%(user_ids)s)
  and status in ('open', 'pending', 'sending')

-- name: email_config
-- The API key's e-mail service (none when never set).
select * from notification_email_configs where api_key_id = %(api_key_id)s

-- name: save_email_config
-- Store the API key's e-mail service; null secrets keep the stored ones unless `clear_*` is set.
insert into notification_email_configs (api_key_id, use_email_service, config, api_key_enc, api_key_last4,
                                        smtp_password_enc, updated_at)
values (%(api_key_id)s, %(use_email_service)s, %(config)s, %(api_key_enc)s, %(api_key_last4)s,
        %(smtp_password_enc)s, %(now)s)
on conflict (api_key_id) do update set
    use_email_service = excluded.use_email_service, config = excluded.config,
    api_key_enc = case when %(clear_api_key)s then null
                       else coalesce(excluded.api_key_enc, notification_email_configs.api_key_enc) end,
    api_key_last4 = case when %(clear_api_key)s then null
                         else coalesce(excluded.api_key_last4, notification_email_configs.api_key_last4) end,
    smtp_password_enc = case when %(clear_smtp_password)s then null
                             else coalesce(excluded.smtp_password_enc, notification_email_configs.smtp_password_enc) end,
    updated_at = excluded.updated_at
returning *

-- name: open_email
-- Open the e-mail that gathers a user's notifications in an organization; nothing when one is open already.
insert into notification_emails (api_key_id, id, organization_id, user_id, email, status, due_at, created_at,
                                 updated_at)
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(user_id)s, %(email)s, %(status)s, %(due_at)s, %(now)s,
        %(now)s)
on conflict (api_key_id, organization_id, user_id) where status = 'open' do nothing
returning id

-- name: lock_open_email
-- The open e-mail of a user in an organization, locked while a notification joins it.
select * from notification_emails
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and user_id = %(user_id)s
  and status = 'open'
for update

-- name: add_email_item
-- A notification joins an e-mail; the e-mail closes (pending, due now) when it holds `max_size` notifications.
with item as (
    insert into notification_email_items (api_key_id, email_id, notification_id, document_id, headline, body,
                                          created_at)
    values (%(api_key_id)s, %(email_id)s, %(notification_id)s, %(document_id)s, %(headline)s, %(body)s, %(now)s)
    on conflict do nothing
    returning email_id
)
update notification_emails set
    size = size + 1, email = %(email)s, updated_at = %(now)s,
    status = case when size + 1 >= %(max_size)s then 'pending' else status end,
    due_at = case when size + 1 >= %(max_size)s then %(now)s else due_at end
where api_key_id = %(api_key_id)s and id in (select email_id from item)

-- name: emails_today
-- How many e-mails an API key made in the last 24 hours (the daily bound).
select count(*) as n from notification_emails
where api_key_id = %(api_key_id)s and created_at > %(since)s and status <> 'skipped'

-- name: workspace_emails_today
-- How many e-mails all API keys of one key's workspace made in the last 24 hours (the workspace's daily bound).
select count(*) as n from notification_emails
where api_key_id in (
    select id from api_keys where workspace_id = (select workspace_id from api_keys where id = %(api_key_id)s)
) and created_at > %(since)s and status <> 'skipped'

-- name: due_emails
-- E-mails whose time has come (window over, or a retry due; a lost send after its lease), locked; oldest first.
select * from notification_emails
where ((status in ('open', 'pending') and due_at <= %(now)s) or (status = 'sending' and lease_until <= %(now)s))
order by due_at
limit %(limit)s
for update skip locked

-- name: mark_email_sending
-- An e-mail handed to a send job: nobody else takes it until its lease ends.
update notification_emails set status = 'sending', lease_until = %(lease_until)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: claim_email
-- The e-mail a send job is about, if it is still the job's to send: handed out for this attempt, not cancelled or
-- finished since.
select * from notification_emails
where api_key_id = %(api_key_id)s and id = %(id)s and status = 'sending' and attempts = %(attempts)s

-- name: email_items
-- The notifications an e-mail reports, oldest first.
select * from notification_email_items
where api_key_id = %(api_key_id)s and email_id = %(email_id)s
order by created_at, notification_id

-- name: finish_email
-- Record an attempt: sent, failed for good, or pending again at `due_at` (a retry); only over the attempt it claimed
-- (an e-mail cancelled meanwhile stays cancelled).
update notification_emails set
    status = %(status)s, attempts = attempts + 1, provider = %(provider)s, subject = %(subject)s,
    last_error = %(error)s, due_at = coalesce(%(due_at)s, due_at), lease_until = null,
    sent_at = case when %(status)s = 'sent' then %(now)s else sent_at end, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and status = 'sending' and attempts = %(attempts)s

-- name: email_counts
-- How many of an API key's e-mails are in each state.
select status, count(*) as n from notification_emails where api_key_id = %(api_key_id)s group by status

-- name: recent_emails
-- An API key's latest e-mails (optionally one user's or one state's), with the notifications each reports.
select e.*, array(select i.notification_id from notification_email_items i
                  where i.api_key_id = e.api_key_id and i.email_id = e.id
                  order by i.created_at, i.notification_id) as notification_ids
from notification_emails e
where e.api_key_id = %(api_key_id)s
  and (%(user_id)s::text is null or e.user_id = %(user_id)s)
  and (%(status)s::text is null or e.status = %(status)s)
order by e.created_at desc, e.id desc
limit %(limit)s

-- name: workspace_owner
-- The owner e-mail of the caller's workspace (workspace/email/status).
select owner_email from workspaces where id = %(workspace_id)s

-- name: forget_preferences
-- User-data deletion: the users' preferences and the e-mails and Slack messages waiting for them.
with gone as (
    delete from notification_preferences
    where api_key_id = %(api_key_id)s and user_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
), slack as (
    delete from notification_slack_messages
    where api_key_id = %(api_key_id)s and user_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
)
delete from notification_emails
where api_key_id = %(api_key_id)s and user_id = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: owned_workspaces
-- The workspaces an e-mail address owns, a few at most (the public workspace/email/status and send-login-link).
select id, name from workspaces where lower(owner_email) = lower(%(email)s) order by id limit %(limit)s

-- Slack (notifications/slack.py): the API key's incoming webhook and the messages batched for it.

-- name: save_slack_webhook
-- Store (or clear, with nulls) the API key's sealed Slack incoming-webhook URL beside its e-mail service.
insert into notification_email_configs (api_key_id, slack_webhook_enc, slack_webhook_hint, updated_at)
values (%(api_key_id)s, %(webhook_enc)s, %(webhook_hint)s, %(now)s)
on conflict (api_key_id) do update set
    slack_webhook_enc = excluded.slack_webhook_enc, slack_webhook_hint = excluded.slack_webhook_hint,
    updated_at = excluded.updated_at
returning *

-- name: open_slack
-- Open the Slack message that gathers a user's notifications in an organization; nothing when one is open already.
insert into notification_slack_messages (api_key_id, id, organization_id, user_id, status, due_at, created_at,
                                         updated_at)
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(user_id)s, %(status)s, %(due_at)s, %(now)s, %(now)s)
on conflict (api_key_id, organization_id, user_id) where status = 'open' do nothing

-- name: lock_open_slack
-- The open Slack message of a user in an organization, locked while a notification joins it.
select * from notification_slack_messages
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and user_id = %(user_id)s
  and status = 'open'
for update

-- name: add_slack_item
-- A notification joins a Slack message; it closes (pending, due now) when it holds `max_size` notifications.
with item as (
    insert into notification_slack_items (api_key_id, message_id, notification_id, document_id, headline, body,
                                          created_at)
    values (%(api_key_id)s, %(message_id)s, %(notification_id)s, %(document_id)s, %(headline)s, %(body)s, %(now)s)
    on conflict do nothing
    returning message_id
)
update notification_slack_messages set
    size = size + 1, updated_at = %(now)s,
    status = case when size + 1 >= %(max_size)s then 'pending' else status end,
    due_at = case when size + 1 >= %(max_size)s then %(now)s else due_at end
where api_key_id = %(api_key_id)s and id in (select message_id from item)

-- name: slack_today
-- How many Slack messages an API key made in the last 24 hours (the daily bound).
select count(*) as n from notification_slack_messages
where api_key_id = %(api_key_id)s and created_at > %(since)s and status <> 'skipped'

-- name: due_slack
-- Slack messages whose time has come (window over, a retry due, a lost send after its lease), locked; oldest first.
select * from notification_slack_messages
where ((status in ('open', 'pending') and due_at <= %(now)s) or (status = 'sending' and lease_until <= %(now)s))
order by due_at
limit %(limit)s
for update skip locked

-- name: mark_slack_sending
-- A Slack message handed to a send job: nobody else takes it until its lease ends.
update notification_slack_messages set status = 'sending', lease_until = %(lease_until)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: claim_slack
-- The Slack message a send job is about, if it is still the job's: handed out for this attempt, not cancelled since.
select * from notification_slack_messages
where api_key_id = %(api_key_id)s and id = %(id)s and status = 'sending' and attempts = %(attempts)s

-- name: slack_items
-- The notifications a Slack message reports, oldest first.
select * from notification_slack_items
where api_key_id = %(api_key_id)s and message_id = %(message_id)s
order by created_at, notification_id

-- name: finish_slack
-- Record an attempt: sent, failed for good, or pending again at `due_at` (a retry); only over the attempt it claimed.
update notification_slack_messages set
    status = %(status)s, attempts = attempts + 1, last_error = %(error)s, due_at = coalesce(%(due_at)s, due_at),
    lease_until = null, sent_at = case when %(status)s = 'sent' then %(now)s else sent_at end, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and status = 'sending' and attempts = %(attempts)s

-- name: cancel_slack
-- A user who turned Slack off gets none of the Slack messages still waiting for them.
update notification_slack_messages set status = 'cancelled', last_error = %(reason)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and user_id = any(%(user_ids)s)
  and status in ('open', 'pending', 'sending')

-- name: slack_counts
-- How many of an API key's Slack messages are in each state.
select status, count(*) as n from notification_slack_messages where api_key_id = %(api_key_id)s group by status

-- name: recent_slack
-- An API key's latest Slack messages (optionally one user's or one state's), with the notifications each reports.
select m.*, array(select i.notification_id from notification_slack_items i
                  where i.api_key_id = m.api_key_id and i.message_id = m.id
                  order by i.created_at, i.notification_id) as notification_ids
from notification_slack_messages m
where m.api_key_id = %(api_key_id)s
  and (%(user_id)s::text is null or m.user_id = %(user_id)s)
  and (%(status)s::text is null or m.status = %(status)s)
order by m.created_at desc, m.id desc
limit %(limit)s
