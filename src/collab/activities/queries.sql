-- name: upsert_activity
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
select * from activities where api_key_id = %(api_key_id)s and id = %(id)s

-- name: list_activities
-- A page by key (at most `limit` rows), then only the rows that start within `budget` bytes of JSON (sizes
-- measured here, so the API never loads more); `fetched` is how many rows the page had by key.
with page as (
    select id, row_number() over (order by
               case when %(desc)s then "timestamp" end desc, case when %(desc)s then id end desc,
               case when not %(desc)s then "timestamp" end asc, case when not %(desc)s then id end asc) as n
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
    select p.id, p.n, count(*) over () as fetched,
           sum(b.bytes) over (order by p.n) - b.bytes as before
    from page p
    join activities a on a.api_key_id = %(api_key_id)s and a.id = p.id
    cross join lateral (
        select octet_length(concat(a.id, a.action_type, a.action_user, a.target_entity_id, a.target_sub_entity_id,
                                   a.changes, a.entity_data, a.entity_target_data, a.display_message_template,
                                   a.display_message_template_data, a.action_icon)) as bytes
    ) b
)
select a.*, s.fetched from sized s
join activities a on a.api_key_id = %(api_key_id)s and a.id = s.id
where s.before < %(budget)s
order by s.n

-- name: delete_activities
delete from activities
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(document_id)s::text is null or document_id = %(document_id)s)
  and (%(activity_ids)s::text[] is null or id = any(%(activity_ids)s))
returning id
