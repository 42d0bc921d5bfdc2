-- name: upsert_activity
-- Insert an activity or replace the one with its id; whether it was new.
insert into activities (api_key_id, id, organization_id, document_id, feature_type, action_type, action_user,
                        target_entity_id, target_sub_entity_id, changes, entity_data, entity_target_data,
                        display_message_template, display_message_template_data, action_icon,
                        is_activity_resolver_used, "timestamp")
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(document_id)s, %(feature_type)s, %(action_type)s,
        %(action_user)s, %(target_entity_id)s, %(target_sub_entity_id)s, %(changes)s, %(entity_data)s,
        %(entity_target_data)s, %(display_message_template)s, %(display_message_template_data)s, %(action_icon)s,
        %(is_activity_resolver_used)s, %(timestamp)s)
on conflict (api_key_id, id) do update set
    organization_id = excluded.organization_id, document_id = excluded.document_id,
    feature_type = excluded.feature_type, action_type = excluded.action_type, action_user = excluded.action_user,
    target_entity_id = excluded.target_entity_id, target_sub_entity_id = excluded.target_sub_entity_id,
    changes = excluded.changes, entity_data = excluded.entity_data, entity_target_data = excluded.entity_target_data,
    display_message_template = excluded.display_message_template,
    display_message_template_data = excluded.display_message_template_data, action_icon = excluded.action_icon,
    is_activity_resolver_used = excluded.is_activity_resolver_used, "timestamp" = excluded."timestamp",
    updated_at = now()
returning (xmax = 0) as inserted

-- name: update_activity
-- Change only the flagged fields of an activity.
update activities set
    changes = case when %(set_changes)s then %(changes)s else changes end,
    entity_data = case when %(set_entity_data)s then %(entity_data)s else entity_data end,
    entity_target_data = case when %(set_entity_target_data)s then %(entity_target_data)s else entity_target_data end,
    display_message_template = case when %(set_display_message_template)s
        then %(display_message_template)s else display_message_template end,
    display_message_template_data = case when %(set_display_message_template_data)s
        then %(display_message_template_data)s else display_message_template_data end,
    action_icon = case when %(set_action_icon)s then %(action_icon)s else action_icon end,
    updated_at = now()
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s

-- name: get_activity
-- An activity by id.
select * from activities where api_key_id = %(api_key_id)s and id = %(id)s

-- name: list_activities
-- A page by key (at most `limit` rows, taken by a top-N sort or the index), then only the rows that start within
-- `budget` bytes by a cheap estimate (the sizes as stored, a compressed JSON value counted 10 times: nothing is
-- read out of TOAST or rendered), so the API never loads much more than the budget; `fetched` is how many rows
-- the page had by key. The exact cut is made on the records as rendered (kit/paging.py).
with page as (
    select id, "timestamp",
           octet_length(id) + octet_length(action_type) + coalesce(octet_length(target_entity_id), 0)
           + coalesce(octet_length(target_sub_entity_id), 0) + coalesce(octet_length(display_message_template), 0)
           + coalesce(octet_length(action_icon), 0)
           + (select coalesce(sum(pg_column_size(v) * case when pg_column_compression(v) is null then 1 else 10 end), 0)
              from (values (action_user), (changes), (entity_data), (entity_target_data),
                           (display_message_template_data)) j(v)) as bytes
    from activities
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
      and (%(document_id)s::text is null or document_id = %(document_id)s)
      and (%(target_entity_id)s::text is null or target_entity_id = %(target_entity_id)s)
      and (%(feature_types)s::text[] is null or feature_type = any(%(feature_types)s))
      and (%(action_types)s::text[] is null or action_type = any(%(action_types)s))
      and (%(user_id)s::text is null or action_user ->> 'userId' = %(user_id)s)
      and (%(activity_ids)s::text[] is null or id = any(%(activity_ids)s))
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
select a.*, s.fetched from sized s
-- By key, row by row (offset 0 keeps the planner from trading the index for a scan of the tenant's rows).
cross join lateral (select * from activities a where a.api_key_id = %(api_key_id)s and a.id = s.id offset 0) a
where s.before < %(budget)s
order by s.n

-- name: delete_activities
-- Delete a document's or an organization's activities (or only some ids, or those about one entity); the ids deleted.
delete from activities
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(document_id)s::text is null or document_id = %(document_id)s)
  and (%(target_entity_id)s::text is null or target_entity_id = %(target_entity_id)s)
  and (%(activity_ids)s::text[] is null or id = any(%(activity_ids)s))
returning id

-- name: add_activities
-- activities/add in one statement when nothing else follows the write (autocommit makes it atomic): the key's
-- settings read, the records whose trigger is not off written, and the judgments' job of those among
-- `derive_ids` recorded (the row kit/jobs.py's `insert_job` writes, marked sent). Writes nothing when the
-- activity service is off, when the notification service is on, or when `events` (some record is a webhook event
-- type) and the key has an enabled webhook endpoint or the basic webhook service: the caller then takes the
-- transaction path, which notifies and emits. The records carry distinct ids: one statement cannot write a row twice.
with settings as (
    select coalesce((k.activity_config ->> 'isEnabled')::boolean, false) as enabled,
           coalesce((k.notification_config ->> 'useNotificationService')::boolean, false)
           or (%(events)s and coalesce((k.webhook_config ->> 'isEnabled')::boolean, false)
               and exists (select 1 from webhook_endpoints e
                           where e.api_key_id = k.id and e.kind = 'advanced' and not e.disabled))
           -- Velt's basic webhook service (ADR 0049) is sent from the transaction path too.
           or (%(events)s and coalesce((k.webhook_config -> 'basic' ->> 'useWebhookService')::boolean, false))
               as follows,
           k.activity_config -> 'triggers' -> 'comment' as triggers
    from api_keys k where k.id = %(api_key_id)s
), written as (
    insert into activities (api_key_id, id, organization_id, document_id, feature_type, action_type, action_user,
                            target_entity_id, target_sub_entity_id, changes, entity_data, entity_target_data,
                            display_message_template, display_message_template_data, action_icon,
                            is_activity_resolver_used, "timestamp")
    select %(api_key_id)s, r.id, r.organization_id, r.document_id, r.feature_type, r.action_type, r.action_user,
           r.target_entity_id, r.target_sub_entity_id, r.changes, r.entity_data, r.entity_target_data,
           r.display_message_template, r.display_message_template_data, r.action_icon,
           r.is_activity_resolver_used, r."timestamp"
    from settings s,
         jsonb_to_recordset(%(records)s)
             as r(id text, organization_id text, document_id text, feature_type text, action_type text,
                  action_user jsonb, target_entity_id text, target_sub_entity_id text, changes jsonb,
                  entity_data jsonb, entity_target_data jsonb, display_message_template text,
                  display_message_template_data jsonb, action_icon text, is_activity_resolver_used boolean,
                  "timestamp" bigint)
    where s.enabled and not s.follows and (s.triggers -> r.action_type) is distinct from 'false'::jsonb
    on conflict (api_key_id, id) do update set
        organization_id = excluded.organization_id, document_id = excluded.document_id,
        feature_type = excluded.feature_type, action_type = excluded.action_type, action_user = excluded.action_user,
        target_entity_id = excluded.target_entity_id, target_sub_entity_id = excluded.target_sub_entity_id,
        changes = excluded.changes, entity_data = excluded.entity_data,
        entity_target_data = excluded.entity_target_data,
        display_message_template = excluded.display_message_template,
        display_message_template_data = excluded.display_message_template_data, action_icon = excluded.action_icon,
        is_activity_resolver_used = excluded.is_activity_resolver_used, "timestamp" = excluded."timestamp",
        updated_at = now()
    returning id
), job as (
    insert into jobs (id, api_key_id, function, args, enqueued_at)
    select %(job_id)s, %(api_key_id)s, 'derive_judgments', jsonb_build_object('activity_ids', jsonb_agg(id)), now()
    from written where id = any(%(derive_ids)s::text[]) having count(*) > 0
    returning id
)
select s.enabled, s.follows, (select count(*) from written) as logged, (select count(*) from job) as queued
from settings s
