-- name: upsert_grant
-- Grant a principal a role on a resource, or change the role and expiry of the grant it has.
insert into grants (api_key_id, organization_id, principal_type, principal_id, resource_type, resource_id,
                    access_role, expires_at, created_at, updated_at)
values (%(api_key_id)s, %(organization_id)s, %(principal_type)s, %(principal_id)s, %(resource_type)s,
        %(resource_id)s, %(access_role)s, %(expires_at)s, %(now)s, %(now)s)
on conflict (api_key_id, organization_id, principal_type, principal_id, resource_type, resource_id) do update
set access_role = excluded.access_role, expires_at = excluded.expires_at, updated_at = excluded.updated_at

-- name: delete_grant
-- Remove one principal's grant on one resource.
delete from grants
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and principal_type = %(principal_type)s and principal_id = %(principal_id)s
  and resource_type = %(resource_type)s and resource_id = %(resource_id)s

-- name: missing_resources
-- The positions (1-based) of the resources that do not exist in their organization, in one pass.
select r.i from unnest(%(types)s::text[], %(ids)s::text[], %(orgs)s::text[]) with ordinality as r (type, id, org, i)
where not exists (
    select 1 from organizations o
    where o.api_key_id = %(api_key_id)s and o.id = r.org
      and (r.type = 'organization'
           or (r.type = 'folder' and exists (
                select 1 from folders f where f.api_key_id = o.api_key_id and f.organization_id = o.id and f.id = r.id))
           or (r.type = 'document' and exists (
                select 1 from documents d where d.api_key_id = o.api_key_id and d.organization_id = o.id and d.id = r.id)))
)
order by r.i

-- name: group_exists
-- Whether a user group exists in the organization.
select exists (
    select 1 from user_groups
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
) as found

-- name: access_inputs
-- Everything effective access is computed from, in one round trip: the organization (null when missing), the
-- grants that apply now to each user (directly or through a group they belong to), every folder with its
-- ancestors (as documents' folder_tree) and the access types set on folders, the folder, access type and disabled
-- state of each document asked about or granted, and whether the API key has a permission provider enabled.
with recursive org as (
    select disabled from organizations where api_key_id = %(api_key_id)s and id = %(organization_id)s
), live as (
    select u.user_id, g.resource_type, g.resource_id, g.access_role, g.expires_at
    from unnest(%(user_ids)s::text[]) as u (user_id)
    join grants g
      on g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
     and ((g.principal_type = 'user' and g.principal_id = u.user_id)
          or (g.principal_type = 'group' and g.principal_id in (
                select m.group_id from group_members m
                where m.api_key_id = %(api_key_id)s and m.organization_id = %(organization_id)s
                  and m.user_id = u.user_id)))
    where (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s) and exists (select from org)
), tree as (
    select id, parent_id, array[]::text[] as ancestors, access_type
    from folders
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and parent_id is null
      and exists (select from org)
  union all
    select f.id, f.parent_id, t.ancestors || t.id, f.access_type
    from folders f join tree t on f.parent_id = t.id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s
)
select (select json_build_object('disabled', disabled) from org) as organization,
       coalesce((select json_agg(live) from live), '[]') as grants,
       coalesce((select json_object_agg(id, ancestors) from tree), '{}') as folders,
       coalesce((select json_object_agg(id, access_type) from tree where access_type is not null), '{}')
         as folder_types,
       coalesce((select json_object_agg(w.id, json_build_object('folder', d.folder_id, 'accessType', d.access_type,
                                                                'disabled', d.disabled))
                 from unnest(array(select unnest(%(document_ids)s::text[]) union
                                   select resource_id from live where resource_type = 'document')) as w (id)
                 -- one primary-key probe per id (limit 1 keeps it a probe: a join may scan the organization)
                 join lateral (select folder_id, access_type, disabled from documents
                               where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
                                 and id = w.id and exists (select from org) limit 1) d on true), '{}')
         as documents,
       exists (select 1 from permission_providers p
               where p.api_key_id = %(api_key_id)s and p.enabled and p.url <> '') as provider

-- name: document_folders
-- The folder of each of some documents of an organization.
select id, folder_id from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)

-- name: access_settings
-- A document's own access type and disabled state, the access types set on the folders above it (`path`), and
-- whether the API key's permission provider decides instead of grants.
select d.access_type, d.disabled,
       exists (select 1 from permission_providers p
               where p.api_key_id = d.api_key_id and p.enabled and p.url <> '') as provider,
       coalesce((select json_object_agg(f.id, f.access_type) from folders f
                 where f.api_key_id = d.api_key_id and f.organization_id = d.organization_id
                   and f.id = any(%(path)s) and f.access_type is not null), '{}') as folder_types
from documents d
where d.api_key_id = %(api_key_id)s and d.organization_id = %(organization_id)s and d.id = %(id)s

-- name: grants_on
-- The live grants on some resources of an organization, per user: a group's grant once for each member.
select coalesce(m.user_id, g.principal_id) as user_id,
       case when g.principal_type = 'group' then g.principal_id end as group_id,
       g.resource_type, g.resource_id, g.access_role, g.expires_at
from grants g
join unnest(%(types)s::text[], %(ids)s::text[]) as r (type, id) on r.type = g.resource_type and r.id = g.resource_id
left join group_members m
  on g.principal_type = 'group' and m.api_key_id = g.api_key_id and m.organization_id = g.organization_id
 and m.group_id = g.principal_id
where g.api_key_id = %(api_key_id)s and g.organization_id = %(organization_id)s
  and (g.principal_type = 'user' or m.user_id is not null)
  and (g.expires_at is null or g.expires_at * 1000 > %(now_ms)s)
order by 1, g.resource_type, g.resource_id, 2 nulls first

-- name: set_document_access
-- Set the access type of some documents of an organization (null: inherit the folder's); the ids found.
update documents set access_type = %(access_type)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)
returning id

-- name: set_document_disabled
-- Disable or restore some documents of an organization on their own; the ids found.
update documents set disabled = %(disabled)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)
returning id

-- name: set_folder_access
-- Set the access type of some folders of an organization (null: inherit the parent's); the ids found.
update folders set access_type = %(access_type)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)
returning id

-- name: provider_config
-- An API key's permission provider settings (no row: never configured).
select enabled, url, auth_token_enc, require_signature, updated_at from permission_providers
where api_key_id = %(api_key_id)s

-- name: upsert_provider_config
-- Store an API key's permission provider settings (whole: the service merged them with what was stored).
insert into permission_providers (api_key_id, enabled, url, auth_token_enc, require_signature, updated_at)
values (%(api_key_id)s, %(enabled)s, %(url)s, %(auth_token_enc)s, %(require_signature)s, %(now)s)
on conflict (api_key_id) do update
set enabled = excluded.enabled, url = excluded.url, auth_token_enc = excluded.auth_token_enc,
    require_signature = excluded.require_signature, updated_at = excluded.updated_at
