-- name: update_users
-- users/update in one statement: where the organization and the scope resource exist, the users among those given
-- (ids, names, e-mails and roles side by side; null keeps a field) who hold a live grant of their own on the scope
-- resource get their profile and that grant's role changed. Answers which users were updated (none when the
-- organization or the scope resource is missing).
with found as (
    select exists (select 1 from organizations where api_key_id = %(api_key_id)s and id = %(organization_id)s)
             as organization,
           case %(resource_type)s
             when 'organization' then true
             when 'folder' then exists (select 1 from folders where api_key_id = %(api_key_id)s
                                        and organization_id = %(organization_id)s and id = %(resource_id)s)
             else exists (select 1 from documents where api_key_id = %(api_key_id)s
                          and organization_id = %(organization_id)s and id = %(resource_id)s)
           end as scope
), given as (
    select * from unnest(%(user_ids)s::text[], %(names)s::text[], %(emails)s::text[], %(roles)s::text[])
      as u (id, name, email, role)
), granted as (
    select g.principal_id from grants g, found
    where found.organization and found.scope
      and g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'user' and g.principal_id in (select id from given)
      and g.resource_type = %(resource_type)s and g.resource_id = %(resource_id)s
      and (g.expires_at is null or g.expires_at * 1000 > %(now)s)
    for update of g
), profiles as (
    -- The profile write of permissions.profiles.record_user, for every updated user at once.
    insert into users (api_key_id, id, name, email, created_at, updated_at)
    select %(api_key_id)s, u.id, u.name, u.email, %(now)s, %(now)s
    from given u where u.id in (select principal_id from granted)
    on conflict (api_key_id, id) do update
    set name = coalesce(excluded.name, users.name), email = coalesce(excluded.email, users.email),
        updated_at = excluded.updated_at
), roles as (
    update grants g set access_role = u.role, updated_at = %(now)s
    from given u
    where u.role is not null and u.id in (select principal_id from granted)
      and g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'user' and g.principal_id = u.id
      and g.resource_type = %(resource_type)s and g.resource_id = %(resource_id)s
)
select array(select principal_id from granted) as updated

-- name: delete_scope_grant
-- Remove the user's own grant on the scope resource.
delete from grants
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and principal_type = 'user' and principal_id = %(user_id)s
  and resource_type = %(resource_type)s and resource_id = %(resource_id)s

-- name: delete_user_grants
-- A user's grants (and group memberships) in some organizations, or in all when none are named.
with gone as (
    delete from grants
    where api_key_id = %(api_key_id)s and principal_type = 'user' and principal_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
    returning principal_id
), left_groups as (
    delete from group_members
    where api_key_id = %(api_key_id)s and user_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
    returning user_id
)
select principal_id as user_id from gone union select user_id from left_groups

-- name: list_users
-- Users holding a live grant at the scope, directly or through a group; the higher role wins.
with holders as (
    select g.resource_id, g.principal_id as user_id, g.access_role
    from grants g
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'user' and g.resource_type = %(resource_type)s
      and (%(resource_id)s::text is null or g.resource_id = %(resource_id)s)
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
  union all
    select g.resource_id, m.user_id, g.access_role
    from grants g
    join group_members m
      on m.api_key_id = g.api_key_id and m.organization_id = g.organization_id and m.group_id = g.principal_id
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'group' and g.resource_type = %(resource_type)s
      and (%(resource_id)s::text is null or g.resource_id = %(resource_id)s)
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
), best as (
    select resource_id, user_id,
           case when bool_or(access_role = 'editor') then 'editor' else 'viewer' end as access_role
    from holders group by resource_id, user_id
)
select b.resource_id, b.user_id, b.access_role, u.name, u.email
from best b
left join users u on u.api_key_id = %(api_key_id)s and u.id = b.user_id
where (%(user_ids)s::text[] is null or b.user_id = any(%(user_ids)s))
  and (%(group_ids)s::text[] is null or exists (
        select 1 from group_members m
        where m.api_key_id = %(api_key_id)s and m.organization_id = %(organization_id)s
          and m.group_id = any(%(group_ids)s) and m.user_id = b.user_id))
  and (%(after_resource)s::text is null or (b.resource_id, b.user_id) > (%(after_resource)s, %(after_user)s))
order by b.resource_id, b.user_id
limit %(limit)s

-- name: insert_group
-- Create a user group in an organization; nothing when it exists.
insert into user_groups (api_key_id, organization_id, id, name, created_at)
values (%(api_key_id)s, %(organization_id)s, %(id)s, %(name)s, %(now)s)
on conflict do nothing
returning id

-- name: insert_member
-- Add a user to a group; nothing when the user is a member already.
insert into group_members (api_key_id, organization_id, group_id, user_id)
values (%(api_key_id)s, %(organization_id)s, %(group_id)s, %(user_id)s)
on conflict do nothing
returning user_id

-- name: delete_member
-- Take a user out of a group; nothing when the user was not in it.
delete from group_members
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and group_id = %(group_id)s and user_id = %(user_id)s
returning user_id

-- name: insert_deletion
-- Record a user-data deletion request and the tasks it must run.
insert into user_data_deletions (api_key_id, id, user_ids, organization_ids, tasks, created_at)
values (%(api_key_id)s, %(id)s, %(user_ids)s, %(organization_ids)s, %(tasks)s, %(now)s)

-- name: get_deletion
-- A user-data deletion request with the status and error of its job.
select d.*, j.status as job_status, j.error as job_error
from user_data_deletions d left join jobs j on j.id = d.id
where d.api_key_id = %(api_key_id)s and d.id = %(id)s

-- name: task_done
-- Note one task of a user-data deletion as done (once).
update user_data_deletions
set done = array_append(done, %(task)s::text), last_task_completed_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and not (%(task)s::text = any(done))

-- name: delete_user_activities
-- The activities the users performed, in some organizations or in all.
delete from activities
where api_key_id = %(api_key_id)s and action_user ->> 'userId' = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: delete_contacts
-- Profiles go when the deletion covers every organization, or when no access is left anywhere.
delete from users u
where u.api_key_id = %(api_key_id)s and u.id = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null
       or (not exists (select 1 from grants g where g.api_key_id = u.api_key_id
                         and g.principal_type = 'user' and g.principal_id = u.id)
           and not exists (select 1 from group_members m where m.api_key_id = u.api_key_id and m.user_id = u.id)))

-- name: export_notifications
-- Export: a page of the notifications the users caused, receive or have read, in id order after a key.
select * from notifications n
where n.api_key_id = %(api_key_id)s
  and (n.action_user ->> 'userId' = any(%(user_ids)s) or n.notify_users_by_user_id ?| %(user_ids)s::text[]
       or n.read_by && %(user_ids)s::text[])
  and (%(organization_ids)s::text[] is null or n.organization_id = any(%(organization_ids)s))
  and (%(after_id)s::text is null or n.id > %(after_id)s)
order by n.id
limit %(limit)s

-- name: export_activities
-- Export: a page of the activities the users performed, in id order after a key.
select * from activities a
where a.api_key_id = %(api_key_id)s and a.action_user ->> 'userId' = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or a.organization_id = any(%(organization_ids)s))
  and (%(after_id)s::text is null or a.id > %(after_id)s)
order by a.id
limit %(limit)s

-- name: export_recordings
-- Export: a page of the recording versions the users made, in (organization, annotation, version) order after a key.
select * from recordings r
where r.api_key_id = %(api_key_id)s and r.from_user ->> 'userId' = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or r.organization_id = any(%(organization_ids)s))
  and (%(after_org)s::text is null
       or (r.organization_id, r.annotation_id, r.version)
          > (%(after_org)s, %(after_annotation)s, %(after_version)s::int))
order by r.organization_id, r.annotation_id, r.version
limit %(limit)s

-- name: count_users
-- How many users hold a live grant at the scope (on any document when resource_id is null), directly or through
-- a group; optionally only whether one user does.
with holders as (
    select g.resource_id, g.principal_id as user_id
    from grants g
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'user' and g.resource_type = %(resource_type)s
      and (%(resource_id)s::text is null or g.resource_id = %(resource_id)s)
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
  union all
    select g.resource_id, m.user_id
    from grants g
    join group_members m
      on m.api_key_id = g.api_key_id and m.organization_id = g.organization_id and m.group_id = g.principal_id
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'group' and g.resource_type = %(resource_type)s
      and (%(resource_id)s::text is null or g.resource_id = %(resource_id)s)
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
)
select count(distinct user_id) as count from holders
where %(user_id)s::text is null or user_id = %(user_id)s

-- name: document_users
-- A page of the users holding a live grant on any document of the organization (directly or through a group), by
-- userId after a key: each with how many documents, and (when asked) the first 1000 of them with the higher role.
with holders as (
    select g.resource_id, g.principal_id as user_id, g.access_role
    from grants g
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'user' and g.resource_type = 'document'
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
  union all
    select g.resource_id, m.user_id, g.access_role
    from grants g
    join group_members m
      on m.api_key_id = g.api_key_id and m.organization_id = g.organization_id and m.group_id = g.principal_id
    where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
      and g.principal_type = 'group' and g.resource_type = 'document'
      and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
), best as (
    select user_id, resource_id,
           case when bool_or(access_role = 'editor') then 'editor' else 'viewer' end as access_role
    from holders
    where (%(user_ids)s::text[] is null or user_id = any(%(user_ids)s))
      and (%(after_user)s::text is null or user_id > %(after_user)s)
    group by user_id, resource_id
)
select b.user_id, u.name, u.email, count(*) as documents_count,
       -- filter, not case: Postgres builds an aggregate before a case around it could skip it
       (array_agg(array[b.resource_id, b.access_role] order by b.resource_id)
          filter (where %(involved)s))[1:1000] as documents
from best b
left join users u on u.api_key_id = %(api_key_id)s and u.id = b.user_id
group by b.user_id, u.name, u.email
order by b.user_id
limit %(limit)s

-- name: list_groups
-- A page of an organization's user groups by id, optionally only some, each with its number of members.
select g.id, g.name, g.created_at,
       (select count(*) from group_members m
        where m.api_key_id = g.api_key_id and m.organization_id = g.organization_id and m.group_id = g.id) as members
from user_groups g
where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
  and (%(ids)s::text[] is null or g.id = any(%(ids)s))
  and (%(after_id)s::text is null or g.id > %(after_id)s)
order by g.id
limit %(limit)s

-- name: delete_all_members
-- Empty a group; the users taken out.
delete from group_members
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and group_id = %(group_id)s
returning user_id

-- name: insert_invitation
-- Invite an e-mail to a target; an earlier invitation there that was declined or withdrawn is made pending again,
-- a pending or accepted one is left as it is (nothing returned then).
insert into user_invitations (api_key_id, organization_id, id, type, folder_id, document_id, email,
                              organization_name, folder_name, document_name, invited_by, created_at, updated_at)
values (%(api_key_id)s, %(organization_id)s, %(id)s, %(type)s, %(folder_id)s, %(document_id)s,
        %(email)s, %(organization_name)s, %(folder_name)s, %(document_name)s, %(invited_by)s, %(now)s, %(now)s)
on conflict (api_key_id, organization_id, type, resource_id, email) do update
set status = 'PENDING', organization_name = excluded.organization_name, folder_name = excluded.folder_name,
    document_name = excluded.document_name, invited_by = excluded.invited_by, user_id = null,
    updated_at = excluded.updated_at
where user_invitations.status in ('REJECTED', 'WITHDRAWN')
returning *

-- name: get_invitation
-- The invitation of an e-mail to a target.
select * from user_invitations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and type = %(type)s
  and resource_id = %(resource_id)s and email = %(email)s

-- name: respond_invitation
-- Answer a pending invitation (accepted, declined or withdrawn); nothing when it is not pending.
update user_invitations set status = %(status)s, user_id = %(user_id)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and type = %(type)s
  and resource_id = %(resource_id)s and email = %(email)s and status = 'PENDING'
returning *

-- name: list_invitations
-- A page of an organization's invitations by (email, id) after a key, optionally for one e-mail, one status or type.
select * from user_invitations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(email)s::text is null or email = %(email)s)
  and (%(status)s::text is null or status = %(status)s)
  and (%(type)s::text is null or type = %(type)s)
  and (%(after_email)s::text is null or (email, id) > (%(after_email)s, %(after_id)s::text))
order by email, id
limit %(limit)s

-- name: count_pending_invitations
-- How many invitations of a type wait for an answer in an organization.
select count(*) as count from user_invitations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and type = %(type)s
  and status = 'PENDING'
