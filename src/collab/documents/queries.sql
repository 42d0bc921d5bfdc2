-- name: insert_document
insert into documents (api_key_id, organization_id, id, name, folder_id, created_at, updated_at)
values (%(api_key_id)s, %(organization_id)s, %(id)s, %(name)s, %(folder_id)s, %(now)s, %(now)s)
on conflict do nothing
returning id

-- name: list_documents
select * from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and (%(folder_id)s::text is null or folder_id = %(folder_id)s)
  and (%(after_id)s::text is null or id > %(after_id)s)
order by id
limit %(limit)s

-- name: update_document
update documents set
    name = coalesce(%(name)s, name),
    folder_id = coalesce(%(folder_id)s, folder_id),
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning id

-- name: delete_documents
delete from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)
returning id

-- name: delete_document_grants
delete from grants
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and resource_type = 'document' and resource_id = any(%(ids)s)

-- name: lock_document
select id from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
for update

-- name: rename_document
update documents set id = %(new_id)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s

-- name: move_document_grants
update grants set resource_id = %(new_id)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and resource_type = 'document' and resource_id = %(id)s

-- name: drop_clashing_presence
-- Presence is a heartbeat: a user present on both ids keeps the moved row, not the stale target one.
delete from presence t
where t.api_key_id = %(api_key_id)s and t.organization_id = %(organization_id)s and t.document_id = %(new_id)s
  and exists (select 1 from presence s where s.api_key_id = t.api_key_id and s.organization_id = t.organization_id
                and s.document_id = %(id)s and s.user_id = t.user_id)

-- name: insert_folder
insert into folders (api_key_id, organization_id, id, name, parent_id, created_at)
values (%(api_key_id)s, %(organization_id)s, %(id)s, %(name)s, %(parent_id)s, %(now)s)
on conflict do nothing
returning id

-- name: get_folder
select * from folders where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s

-- name: folder_tree
-- Every folder of an organization with its ancestors (root first), parents before children.
with recursive tree as (
    select id, name, parent_id, created_at, array[]::text[] as ancestors
    from folders
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and parent_id is null
  union all
    select f.id, f.name, f.parent_id, f.created_at, t.ancestors || t.id
    from folders f join tree t on f.parent_id = t.id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s
)
select * from tree order by cardinality(ancestors), id

-- name: insert_migration
insert into document_migrations (api_key_id, id, organization_id, document_id, new_document_id, job_id,
                                 created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(document_id)s, %(new_document_id)s, %(job_id)s,
        %(now)s, %(now)s)

-- name: get_migration
-- A job that failed for good fails its migration, whatever state the migration row was left in.
select m.*, j.status as job_status, j.error as job_error
from document_migrations m left join jobs j on j.id = m.job_id
where m.api_key_id = %(api_key_id)s and m.organization_id = %(organization_id)s and m.id = %(id)s

-- name: start_migration
update document_migrations set status = 'in_progress', updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and status in ('pending', 'in_progress')
returning *

-- name: finish_migration
update document_migrations set status = %(status)s, reason = %(reason)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and status in ('pending', 'in_progress')
