-- name: insert_documents
-- Create documents (ids and names side by side) when their organization exists; those whose id exists are left as
-- they are. Answers whether the organization exists and the ids created.
with organization as (
    select 1 from organizations where api_key_id = %(api_key_id)s and id = %(organization_id)s
), added as (
    insert into documents (api_key_id, organization_id, id, name, folder_id, created_at, updated_at)
    select %(api_key_id)s, %(organization_id)s, d.id, d.name, %(folder_id)s, %(now)s, %(now)s
    from unnest(%(ids)s::text[], %(names)s::text[]) as d (id, name)
    where exists (select 1 from organization)
    on conflict do nothing
    returning id
)
select exists (select 1 from organization) as organization, array(select id from added) as added

-- name: list_documents
-- A page of an organization's documents by id, optionally only some ids or one folder's, each with the access type
-- of the nearest folder above it that sets one (`folder_access_type`; null when none does).
select d.*,
       (with recursive up as (
            select f.parent_id, f.access_type, 0 as depth from folders f
            where f.api_key_id = d.api_key_id and f.organization_id = d.organization_id and f.id = d.folder_id
          union all
            select f.parent_id, f.access_type, up.depth + 1 from folders f join up on f.id = up.parent_id
            where f.api_key_id = d.api_key_id and f.organization_id = d.organization_id and up.access_type is null
        )
        select access_type from up where access_type is not null order by depth limit 1) as folder_access_type
from documents d
where d.api_key_id = %(api_key_id)s and d.organization_id = %(organization_id)s
  and (%(ids)s::text[] is null or d.id = any(%(ids)s))
  and (%(folder_id)s::text is null or d.folder_id = %(folder_id)s)
  and (%(after_id)s::text is null or d.id > %(after_id)s)
order by d.id
limit %(limit)s

-- name: update_document
-- Change a document's name or folder (null keeps the stored one).
update documents set
    name = coalesce(%(name)s, name),
    folder_id = coalesce(%(folder_id)s, folder_id),
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning id

-- name: delete_documents
-- Delete documents of an organization; the ids deleted.
delete from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)
returning id

-- name: delete_document_grants
-- Remove the grants on some documents.
delete from grants
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and resource_type = 'document' and resource_id = any(%(ids)s)

-- name: lock_document
-- A document by id, locked for the rest of the transaction.
select id from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
for update

-- name: rename_document
-- Give a document a new id.
update documents set id = %(new_id)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s

-- name: move_document_grants
-- Point the grants on a document at its new id.
update grants set resource_id = %(new_id)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and resource_type = 'document' and resource_id = %(id)s

-- name: drop_orphan_live_states
-- Live state values left under the new id by an earlier release (broadcasts then needed no document): the moved
-- document's own take their place.
delete from live_states
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(new_id)s

-- name: drop_clashing_presence
-- Presence is a heartbeat: a user present on both ids keeps the moved row, not the stale target one.
delete from presence t
where t.api_key_id = %(api_key_id)s and t.organization_id = %(organization_id)s and t.document_id = %(new_id)s
  and exists (select 1 from presence s where s.api_key_id = t.api_key_id and s.organization_id = t.organization_id
                and s.document_id = %(id)s and s.user_id = t.user_id)

-- name: insert_folder
-- Create a folder in an organization (its own access type, or null to inherit); nothing when the id exists.
insert into folders (api_key_id, organization_id, id, name, parent_id, access_type, created_at)
values (%(api_key_id)s, %(organization_id)s, %(id)s, %(name)s, %(parent_id)s, %(access_type)s, %(now)s)
on conflict do nothing
returning id

-- name: get_folder
-- A folder by id.
select * from folders where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s

-- name: folder_tree
-- Every folder of an organization with its ancestors (root first) and the access type it has, set or inherited
-- from the nearest folder above (`effective_type`, null when none sets one), parents before children.
with recursive tree as (
    select id, organization_id, name, parent_id, created_at, updated_at, access_type,
           access_type as effective_type, array[]::text[] as ancestors
    from folders
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and parent_id is null
  union all
    select f.id, f.organization_id, f.name, f.parent_id, f.created_at, f.updated_at, f.access_type,
           coalesce(f.access_type, t.effective_type), t.ancestors || t.id
    from folders f join tree t on f.parent_id = t.id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s
)
select * from tree order by cardinality(ancestors), id

-- name: folder_page
-- A page of an organization's folders with their ancestors, parents before children (by depth, then id) after a
-- (depth, id) key; optionally only the top-level ones, or those at most max_depth levels down. Each carries the
-- access type it has, set or inherited (`effective_type`, as in folder_tree).
with recursive tree as (
    select id, organization_id, name, parent_id, created_at, updated_at, access_type,
           access_type as effective_type, array[]::text[] as ancestors
    from folders
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and parent_id is null
  union all
    select f.id, f.organization_id, f.name, f.parent_id, f.created_at, f.updated_at, f.access_type,
           coalesce(f.access_type, t.effective_type), t.ancestors || t.id
    from folders f join tree t on f.parent_id = t.id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s
      and not %(root_only)s and (%(max_depth)s::int is null or cardinality(t.ancestors) < %(max_depth)s::int)
)
select *, cardinality(ancestors) as depth from tree
where %(after_id)s::text is null or (cardinality(ancestors), id) > (%(after_depth)s::int, %(after_id)s::text)
order by cardinality(ancestors), id
limit %(limit)s

-- name: lock_folder_tree
-- Hold the organization's folder tree until the transaction ends: its moves and deletions run one at a time.
select pg_advisory_xact_lock(hashtextextended(%(api_key_id)s || ':folder-tree:' || %(organization_id)s, 0))

-- name: folder_would_cycle
-- Whether the folder is the new parent or one of its ancestors (the move would put the folder inside itself).
with recursive up as (
    select id, parent_id from folders
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(parent_id)s
  union all
    select f.id, f.parent_id from folders f join up on f.id = up.parent_id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s
)
select exists (select 1 from up where id = %(id)s) as cycle

-- name: update_folder
-- Rename a folder and/or give it a new parent (null parent: top level); null name keeps the stored one.
update folders set
    name = coalesce(%(name)s, name),
    parent_id = case when %(move)s then %(parent_id)s else parent_id end,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning id

-- name: folder_subtree
-- A folder and every folder below it.
with recursive down as (
    select id from folders
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
  union all
    select f.id from folders f join down on f.parent_id = down.id
    where f.api_key_id = %(api_key_id)s and f.organization_id = %(organization_id)s
)
select id from down

-- name: documents_in_folders
-- The ids of the documents directly in any of the folders.
select id from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and folder_id = any(%(folder_ids)s)

-- name: delete_folder_grants
-- Remove the grants on some folders.
delete from grants
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and resource_type = 'folder' and resource_id = any(%(ids)s)

-- name: delete_folder
-- Delete a folder (its subfolders go with it by their foreign key); the id when it existed.
delete from folders
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning id

-- name: move_documents
-- Put documents into a folder (null: into no folder); the ids that exist.
update documents set folder_id = %(folder_id)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)
returning id

-- name: count_documents
-- How many documents an organization has, optionally only those directly in a folder, or only those in none.
select count(*) as count from documents
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(folder_id)s::text is null or folder_id = %(folder_id)s)
  and (not %(outside_folders)s or folder_id is null)

-- name: insert_migration
-- Record a document migration (a move to a new id) and the job that runs it.
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
-- Mark a migration as in progress, unless it finished already.
update document_migrations set status = 'in_progress', updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and status in ('pending', 'in_progress')
returning *

-- name: finish_migration
-- Record a migration's outcome, unless it finished already.
update document_migrations set status = %(status)s, reason = %(reason)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s and status in ('pending', 'in_progress')

-- name: move_feature_rows
-- One feature table's rows of a document follow it to its new id (a template: table, from a fixed list).
update {table} set document_id = %(new_id)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(id)s
