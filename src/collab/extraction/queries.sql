-- name: insert_source
insert into knowledge_sources (id, api_key_id, file_name, mime_type, size_bytes, sha256, content, provider)
values (%(id)s, %(api_key_id)s, %(file_name)s, %(mime_type)s, %(size_bytes)s, %(sha256)s, %(content)s, %(provider)s)

-- name: get_source
select s.id, s.api_key_id, k.workspace_id, s.file_name, s.mime_type, s.content, s.status, s.result, s.provider
from knowledge_sources s join api_keys k on k.id = s.api_key_id
where s.id = %(id)s

-- name: mark_ready
update knowledge_sources
set status = 'ready', canonical_text = %(canonical_text)s, tasks = %(tasks)s, result = %(result)s,
    model = %(model)s, error = null, updated_at = now()
where id = %(id)s and status = 'processing'

-- name: mark_failed
update knowledge_sources set status = 'failed', error = %(error)s, updated_at = now()
where id = %(id)s and status = 'processing'
