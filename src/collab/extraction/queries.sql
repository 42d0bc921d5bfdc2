-- name: insert_source
-- Record an uploaded knowledge source, waiting to be extracted.
insert into knowledge_sources (id, api_key_id, file_name, mime_type, size_bytes, sha256, content, provider)
values (%(id)s, %(api_key_id)s, %(file_name)s, %(mime_type)s, %(size_bytes)s, %(sha256)s, %(content)s, %(provider)s)

-- name: get_source
-- A knowledge source with its workspace, by id.
select s.id, s.api_key_id, k.workspace_id, s.file_name, s.mime_type, s.content, s.status, s.result, s.provider
from knowledge_sources s join api_keys k on k.id = s.api_key_id
where s.id = %(id)s

-- name: mark_ready
-- Store an extraction's result on a source still processing.
update knowledge_sources
set status = 'ready', canonical_text = %(canonical_text)s, tasks = %(tasks)s, result = %(result)s,
    model = %(model)s, error = null, updated_at = now()
where id = %(id)s and status = 'processing'

-- name: mark_failed
-- Fail a source still processing, with the reason.
update knowledge_sources set status = 'failed', error = %(error)s, updated_at = now()
where id = %(id)s and status = 'processing'

-- name: drop_old_content
-- Drop the uploaded bytes of sources older than the retention (the row, its text, tasks and result stay).
with old as (
    select id from knowledge_sources
    where content is not null and status <> 'processing' and created_at < %(before)s
    order by created_at limit %(limit)s
    for update skip locked
)
update knowledge_sources s set content = null, content_dropped_at = now()
from old where s.id = old.id
