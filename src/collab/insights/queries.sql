-- name: due_keys
-- Keys whose judgments changed since their last computation, none queued (or its queueing older than
-- requeue_before: lost), not computed since computed_before; least recently computed first, locked for the sweep.
select api_key_id from insight_state
where changes > computed
  and (queued_at is null or queued_at < %(requeue_before)s)
  and (computed_at is null or computed_at <= %(computed_before)s)
order by computed_at nulls first, api_key_id
limit %(limit)s
for update skip locked

-- name: mark_queued
-- Record that the sweep queued a computation of these keys.
update insight_state set queued_at = %(now)s where api_key_id = any(%(keys)s)

-- name: lock
-- One computation of a key at a time: the transaction's advisory lock, waited for.
select pg_advisory_xact_lock(hashtextextended('collab.insights:' || %(api_key_id)s, 0))

-- name: state
-- The key's change count as this computation starts.
select changes from insight_state where api_key_id = %(api_key_id)s

-- name: computed_seen
-- The change count the key's last stored computation saw.
select computed from insight_state where api_key_id = %(api_key_id)s

-- name: newest_judgments
-- The key's newest judgments (at most `limit`), with what the insights read: reasoning cut to 2,000 characters.
select id, organization_id, decision, left(reasoning, 2000) as reasoning, content_type, reviewer_id,
       left(action_user ->> 'name', 500) as name, left(action_user ->> 'email', 500) as email, created_at
from judgments where api_key_id = %(api_key_id)s
order by created_at desc, id desc
limit %(limit)s

-- name: stored_patterns
-- The key's stored patterns (to keep the times of those that did not change, and to see shifts).
select key, members, enforcement_rate, updated_at, pattern from insight_patterns where api_key_id = %(api_key_id)s

-- name: delete_profiles
-- Forget every stored profile of the key (a computation writes them all again).
delete from insight_profiles where api_key_id = %(api_key_id)s

-- name: insert_profiles
-- Write the key's profiles (parallel arrays).
insert into insight_profiles (api_key_id, user_id, judgments, profile)
select %(api_key_id)s, r.user_id, r.judgments, r.profile
from unnest(%(user_ids)s::text[], %(counts)s::int[], %(profiles)s::jsonb[]) as r (user_id, judgments, profile)

-- name: delete_patterns
-- Forget every stored pattern of the key (a computation writes them all again).
delete from insight_patterns where api_key_id = %(api_key_id)s

-- name: insert_patterns
-- Write the key's patterns (parallel arrays).
insert into insight_patterns (api_key_id, key, members, enforcement_rate, confidence, updated_at, pattern)
select %(api_key_id)s, r.key, r.members, r.enforcement_rate, r.confidence, r.updated_at, r.pattern
from unnest(%(keys)s::text[], %(members)s::text[], %(rates)s::float8[], %(confidences)s::float8[],
            %(updated)s::bigint[], %(patterns)s::jsonb[])
     as r (key, members, enforcement_rate, confidence, updated_at, pattern)

-- name: recent_alerts
-- The key's alerts raised since `since`, and its active ones (dedup and the weekly cap read them).
select dedup_key, status, created_at from insight_alerts
where api_key_id = %(api_key_id)s and (created_at > %(since)s or status = 'active')

-- name: insert_alert
-- Raise one alert.
insert into insight_alerts (api_key_id, id, alert_type, severity, dedup_key, created_at, body)
values (%(api_key_id)s, %(id)s, %(alert_type)s, %(severity)s, %(dedup_key)s, %(created_at)s, %(body)s)

-- name: computed
-- Record a computation: the change count it saw, its time; nothing queued any more (a deleted key is skipped).
insert into insight_state (api_key_id, computed, computed_at)
select %(api_key_id)s, %(seen)s, %(now)s where exists (select 1 from api_keys where id = %(api_key_id)s)
on conflict (api_key_id) do update set
    computed = greatest(insight_state.computed, excluded.computed), computed_at = excluded.computed_at,
    queued_at = null

-- name: count_judgments
-- The key's judgments, counted up to `cap`.
select count(*) as n from (select 1 from judgments where api_key_id = %(api_key_id)s limit %(cap)s) s

-- name: count_profiles
-- The key's stored profiles, counted up to `cap`.
select count(*) as n from (select 1 from insight_profiles where api_key_id = %(api_key_id)s limit %(cap)s) s

-- name: count_patterns
-- The key's stored patterns, counted up to `cap`.
select count(*) as n from (select 1 from insight_patterns where api_key_id = %(api_key_id)s limit %(cap)s) s

-- name: count_knowledge_sources
-- The key's knowledge sources (one row each), exactly.
select count(*) as n from knowledge_sources where api_key_id = %(api_key_id)s

-- name: profile
-- One reviewer's stored profile.
select profile from insight_profiles where api_key_id = %(api_key_id)s and user_id = %(user_id)s

-- name: top_profiles
-- The key's profiles with most judgments (Ask's context).
select profile from insight_profiles where api_key_id = %(api_key_id)s
order by judgments desc, user_id limit %(limit)s

-- name: list_patterns
-- The key's patterns, most recently updated first.
select pattern from insight_patterns where api_key_id = %(api_key_id)s
order by updated_at desc, key limit %(limit)s

-- name: strongest_patterns
-- The key's patterns by confidence (Ask's context).
select pattern from insight_patterns where api_key_id = %(api_key_id)s
order by confidence desc, updated_at desc, key limit %(limit)s

-- name: active_alerts
-- The key's active alerts, newest first.
select * from insight_alerts where api_key_id = %(api_key_id)s and status = 'active'
order by created_at desc, id desc limit %(limit)s

-- name: action_alert
-- Mark one alert actioned; the id when it exists.
update insight_alerts set status = 'actioned'
where api_key_id = %(api_key_id)s and id = %(id)s returning id

-- name: dismiss_alert
-- Dismiss one alert (again: a new time); the id when it exists.
update insight_alerts set status = 'dismissed', dismissed_at = %(now)s, dismissed_by = %(by)s
where api_key_id = %(api_key_id)s and id = %(id)s returning id

-- name: alert_config
-- The key's stored alert settings.
select config from insight_alert_configs where api_key_id = %(api_key_id)s

-- name: make_alert_config
-- The key's alert settings row, empty if it had none: two first merges then queue on one row lock.
insert into insight_alert_configs (api_key_id, config, updated_at) values (%(api_key_id)s, '{}', 0)
on conflict (api_key_id) do nothing

-- name: alert_config_for_update
-- The key's stored alert settings, locked for a merge.
select config from insight_alert_configs where api_key_id = %(api_key_id)s for update

-- name: save_alert_config
-- Store the key's merged alert settings.
insert into insight_alert_configs (api_key_id, config, updated_at) values (%(api_key_id)s, %(config)s, %(now)s)
on conflict (api_key_id) do update set config = excluded.config, updated_at = excluded.updated_at
