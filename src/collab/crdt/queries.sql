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
-- `fetched` is how many editors the page had by key. Each editor's realtime updates not yet compacted come in the
-- same statement (one snapshot: a compaction committing meanwhile can neither hide nor double them).
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
select e.editor_id, e.type, e.content_key, e.state, e.last_updated_by, e.session_id, e.last_update, s.fetched,
       p.pending, p.pending_by, p.pending_at
from sized s
join crdt_editors e on e.api_key_id = %(api_key_id)s and e.organization_id = %(organization_id)s
 and e.document_id = %(document_id)s and e.editor_id = s.editor_id
left join lateral (
    select array_agg(u.yjs_update order by u.seq) as pending,
           (array_agg(u.user_id order by u.seq desc))[1] as pending_by, max(u.created_at) as pending_at
    from crdt_updates u
    where u.api_key_id = e.api_key_id and u.organization_id = e.organization_id and u.document_id = e.document_id
      and u.editor_id = e.editor_id
) p on true
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
-- An editor's Yjs document, locked while an update merges into it (realtime appends, which only key-share the
-- row, go on meanwhile).
select type, content_key, state from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s
for no key update

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

-- name: forget_user_updates
-- User-data deletion: the users no longer show as the authors of pending realtime updates.
update crdt_updates set user_id = null
where api_key_id = %(api_key_id)s and user_id = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))

-- name: editor_kind
-- An editor's shared type and root name (what a realtime room serves), without its state.
select type, content_key from crdt_editors
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s

-- name: append_update
-- Append a Yjs update received over the WebSocket to its editor's log (durable before it is relayed).
insert into crdt_updates (api_key_id, organization_id, document_id, editor_id, yjs_update, user_id, created_at)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(editor_id)s, %(update)s, %(user_id)s, %(now)s)
returning seq

-- name: pending_updates
-- The updates of some editors of a document not yet folded into their state, oldest first.
select editor_id, seq, yjs_update, user_id, created_at from crdt_updates
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = any(%(editor_ids)s)
order by editor_id, seq

-- name: clear_updates
-- Drop an editor's pending updates up to `upto` once they are folded into its state.
delete from crdt_updates
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and editor_id = %(editor_id)s and seq <= %(upto)s

-- name: editors_to_compact
-- Editors whose oldest pending update is older than `before` (the compaction sweep's work), API keys in turns (each
-- key's oldest editor, then each one's second, ...), so no tenant's editors fill the sweep's page for everyone.
with due as (
    select api_key_id, organization_id, document_id, editor_id, min(seq) as first from crdt_updates
    where created_at < %(before)s
    group by api_key_id, organization_id, document_id, editor_id
)
select api_key_id, organization_id, document_id, editor_id from (
    select due.*, row_number() over (partition by api_key_id order by first) as turn from due
) ranked
order by turn, first
limit %(limit)s

-- name: quarantine_updates
-- Move pending updates (by seq) of an editor out of its log into the quarantine, with why each was left out.
with moved as (
    delete from crdt_updates
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
      and editor_id = %(editor_id)s and seq = any(%(seqs)s)
    returning *
)
insert into crdt_quarantine (seq, api_key_id, organization_id, document_id, editor_id, yjs_update, user_id,
                             created_at, reason, quarantined_at)
select m.seq, m.api_key_id, m.organization_id, m.document_id, m.editor_id, m.yjs_update, m.user_id, m.created_at,
       r.reason, %(now)s
from moved m join unnest(%(seqs)s::bigint[], %(reasons)s::text[]) as r (seq, reason) on r.seq = m.seq

-- name: append_updates
-- Append many realtime updates (of any editors) in one statement, in the order given (group commit).
insert into crdt_updates (api_key_id, organization_id, document_id, editor_id, yjs_update, user_id, created_at)
select u.api_key_id, u.organization_id, u.document_id, u.editor_id, u.yjs_update, u.user_id, u.created_at
from unnest(%(api_key_ids)s::text[], %(organization_ids)s::text[], %(document_ids)s::text[], %(editor_ids)s::text[],
            %(updates)s::bytea[], %(user_ids)s::text[], %(nows)s::bigint[])
     with ordinality as u (api_key_id, organization_id, document_id, editor_id, yjs_update, user_id, created_at, i)
order by u.i
