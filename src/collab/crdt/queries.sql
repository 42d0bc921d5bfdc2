-- name: insert_editor
insert into crdt_editors (api_key_id, organization_id, document_id, editor_id, type, content_key, state,
                          last_updated_by, session_id, created_at, last_update)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(editor_id)s, %(type)s, %(content_key)s,
        %(state)s, %(last_updated_by)s, %(session_id)s, %(now)s, %(now)s)
on conflict do nothing
returning editor_id

-- name: list_editors
select editor_id, type, content_key, state, last_updated_by, session_id, last_update from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(editor_id)s::text is null or editor_id = %(editor_id)s)
order by editor_id

-- name: lock_editor
select type, content_key, state from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s
for update

-- name: save_editor
update crdt_editors set
    state = %(state)s, last_updated_by = %(last_updated_by)s, session_id = %(session_id)s, last_update = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s

-- name: delete_editors
delete from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(editor_ids)s::text[] is null or editor_id = any(%(editor_ids)s))
returning editor_id

-- name: forget_user
update crdt_editors set last_updated_by = null
where api_key_id = %(api_key_id)s and last_updated_by = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
