-- name: insert_editor
-- Create an editor's Yjs document; nothing when the editor has one.
insert into crdt_editors (api_key_id, organization_id, document_id, editor_id, type, content_key, state,
                          last_updated_by, session_id, created_at, last_update)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(editor_id)s, %(type)s, %(content_key)s,
        %(state)s, %(last_updated_by)s, %(session_id)s, %(now)s, %(now)s)
on conflict do nothing
returning editor_id

-- name: list_editors
-- A page of a document's editors after `after_id` (at most `limit`), then only those that start within `budget`
-- bytes (the stored state, and its base64 too with `yjs`), so the API never loads every state of a document;
-- `fetched` is how many editors the page had by key.
with page as (
    select editor_id, octet_length(state) as state_bytes from crdt_editors
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
      and (%(editor_id)s::text is null or editor_id = %(editor_id)s)
      and (%(after_id)s::text is null or editor_id > %(after_id)s)
    order by editor_id
    limit %(limit)s
), sized as (
    select editor_id, count(*) over () as fetched,
           sum(bytes) over (order by editor_id) - bytes as before
    from page cross join lateral (
        select 200 + state_bytes + case when %(yjs)s then (state_bytes + 2) / 3 * 4 else 0 end as bytes
    ) b
)
select e.editor_id, e.type, e.content_key, e.state, e.last_updated_by, e.session_id, e.last_update, s.fetched
from sized s
join crdt_editors e on e.api_key_id = %(api_key_id)s and e.organization_id = %(organization_id)s
 and e.document_id = %(document_id)s and e.editor_id = s.editor_id
where s.before < %(budget)s
order by e.editor_id

-- name: lock_document
-- Adds of one document's editors take turns, so the count below holds under concurrency.
select pg_advisory_xact_lock(hashtextextended(%(api_key_id)s || '/' || %(organization_id)s || '/' || %(document_id)s,
                                              7340013))

-- name: count_editors
-- How many editors a document has (run after lock_document, in a new statement, so it sees every add before).
select count(*) as editors from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s

-- name: editor_exists
-- Whether the editor has a document (an add at the editor cap answers ALREADY_EXISTS for it, not the cap).
select exists (
    select 1 from crdt_editors
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
      and editor_id = %(editor_id)s
) as found

-- name: lock_editor
-- An editor's Yjs document, locked while an update merges into it.
select type, content_key, state from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s
for update

-- name: save_editor
-- Store an editor's merged Yjs state and who changed it.
update crdt_editors set
    state = %(state)s, last_updated_by = %(last_updated_by)s, session_id = %(session_id)s, last_update = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s

-- name: delete_editors
-- Delete a document's editors (or only some); the editors deleted.
delete from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(editor_ids)s::text[] is null or editor_id = any(%(editor_ids)s))
returning editor_id

-- name: forget_user
-- User-data deletion: the users no longer show as an editor's last updater.
update crdt_editors set last_updated_by = null
where api_key_id = %(api_key_id)s and last_updated_by = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
