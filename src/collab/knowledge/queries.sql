-- name: count_sources
-- How many knowledge sources an API key holds (a bound on ingests).
select count(*) as n from knowledge_sources where api_key_id = %(api_key_id)s

-- name: count_chunks
-- How many chunks an API key's sources hold (a bound on ingests: search scans a key's vectors exactly).
select count(*) as n from knowledge_chunks where api_key_id = %(api_key_id)s

-- name: insert_source
-- Record an ingested knowledge source, processing until its job has run.
insert into knowledge_sources (id, api_key_id, kind, file_name, mime_type, size_bytes, sha256, content,
                               organization_id, document_id)
values (%(id)s, %(api_key_id)s, 'upload', %(file_name)s, %(mime_type)s, %(size_bytes)s, %(sha256)s, %(content)s,
        %(organization_id)s, %(document_id)s)

-- name: get_source
-- One tenant's source by id, without its bytes.
select s.id, s.api_key_id, s.kind, s.file_name, s.mime_type, s.size_bytes, s.sha256, s.status, s.error,
       s.failure_reason, s.organization_id, s.document_id, s.version, s.rule_based, s.used_raw_fallback,
       s.created_at, s.updated_at, s.content is not null as has_content,
       (select count(*) from knowledge_chunks c where c.source_id = s.id) as chunk_count,
       (select count(*) from knowledge_rules r where r.source_id = s.id) as rule_count
from knowledge_sources s
where s.id = %(id)s and s.api_key_id = %(api_key_id)s

-- name: list_sources
-- One tenant's newest sources, without bytes or text.
select s.id, s.api_key_id, s.kind, s.file_name, s.mime_type, s.size_bytes, s.sha256, s.status, s.error,
       s.failure_reason, s.organization_id, s.document_id, s.version, s.rule_based, s.used_raw_fallback,
       s.created_at, s.updated_at, s.content is not null as has_content,
       (select count(*) from knowledge_chunks c where c.source_id = s.id) as chunk_count,
       (select count(*) from knowledge_rules r where r.source_id = s.id) as rule_count
from knowledge_sources s
where s.api_key_id = %(api_key_id)s
order by s.created_at desc, s.id desc
limit %(limit)s

-- name: source_content
-- A source's stored bytes and its workspace (the ingest job's input, the original download).
select s.content, s.mime_type, s.file_name, s.status, s.kind, k.workspace_id
from knowledge_sources s join api_keys k on k.id = s.api_key_id
where s.id = %(id)s and s.api_key_id = %(api_key_id)s

-- name: canonical_text
-- A completed source's canonical markdown.
select canonical_text from knowledge_sources
where id = %(id)s and api_key_id = %(api_key_id)s and status = 'ready'

-- name: mark_ready
-- Finish a processing source: its canonical markdown, classification and first version.
update knowledge_sources
set status = 'ready', canonical_text = %(canonical_text)s, rule_based = %(rule_based)s,
    used_raw_fallback = %(used_raw_fallback)s, error = null, failure_reason = null, updated_at = now()
where id = %(id)s and status = 'processing'

-- name: mark_failed
-- Fail a processing source, with the documented reason and the log's text.
update knowledge_sources set status = 'failed', failure_reason = %(reason)s, error = %(error)s, updated_at = now()
where id = %(id)s and status = 'processing'

-- name: bump_version
-- A source's new version: its canonical markdown replaced, the version counted up.
update knowledge_sources
set canonical_text = %(canonical_text)s, version = version + 1, updated_at = now()
where id = %(id)s and api_key_id = %(api_key_id)s
returning version

-- name: insert_version
-- Keep one version of a source's canonical markdown.
insert into knowledge_versions (source_id, version, api_key_id, canonical_text, rule_count)
values (%(source_id)s, %(version)s, %(api_key_id)s, %(canonical_text)s, %(rule_count)s)
on conflict (source_id, version) do nothing

-- name: prune_versions
-- Drop a source's versions older than the last %(kept)s (each holds up to 2 MB of markdown).
delete from knowledge_versions where source_id = %(source_id)s and version <= %(version)s - %(kept)s

-- name: delete_chunks
-- Drop a source's chunks (their vectors go with them).
delete from knowledge_chunks where source_id = %(source_id)s

-- name: insert_chunk
-- One chunk of a source.
insert into knowledge_chunks (id, api_key_id, source_id, ordinal, text)
values (%(id)s, %(api_key_id)s, %(source_id)s, %(ordinal)s, %(text)s)

-- name: insert_chunk_embedding
-- A chunk's vector under one model.
insert into knowledge_chunk_embeddings (chunk_id, model, api_key_id, content_hash, embedding)
values (%(id)s, %(model)s, %(api_key_id)s, %(content_hash)s, %(embedding)s::vector)
on conflict (chunk_id, model) do update set content_hash = excluded.content_hash, embedding = excluded.embedding

-- name: current_rules
-- A source's current rules, in order.
select id, content, category, ordinal, version from knowledge_rules
where source_id = %(source_id)s and api_key_id = %(api_key_id)s
order by ordinal

-- name: delete_rules
-- Drop a source's rules (their vectors go with them).
delete from knowledge_rules where source_id = %(source_id)s

-- name: insert_rule
-- One extracted rule of a source's current version.
insert into knowledge_rules (id, api_key_id, source_id, version, ordinal, content, category)
values (%(id)s, %(api_key_id)s, %(source_id)s, %(version)s, %(ordinal)s, %(content)s, %(category)s)

-- name: insert_rule_embedding
-- A rule's vector under one model.
insert into knowledge_rule_embeddings (rule_id, model, api_key_id, content_hash, embedding)
values (%(id)s, %(model)s, %(api_key_id)s, %(content_hash)s, %(embedding)s::vector)
on conflict (rule_id, model) do update set content_hash = excluded.content_hash, embedding = excluded.embedding

-- name: delete_source
-- Delete a source that is not processing; its chunks, rules, vectors and versions go with it.
with gone as (
    select s.id,
           (select count(*) from knowledge_chunks c where c.source_id = s.id) as chunks,
           (select count(*) from knowledge_rules r where r.source_id = s.id) as rules
    from knowledge_sources s
    where s.id = %(id)s and s.api_key_id = %(api_key_id)s and s.status <> 'processing'
    for update
), deleted as (
    delete from knowledge_sources s using gone where s.id = gone.id returning s.id
)
select gone.chunks, gone.rules from gone join deleted on deleted.id = gone.id

-- name: search_chunks
-- The chunks nearest a query vector under one model, of one tenant's completed sources (optionally some).
select c.id, c.source_id, s.file_name, c.text, (e.embedding <=> %(vector)s::vector) as distance
from knowledge_chunk_embeddings e
join knowledge_chunks c on c.id = e.chunk_id
join knowledge_sources s on s.id = c.source_id
where e.model = %(model)s and e.api_key_id = %(api_key_id)s and s.status = 'ready'
  and (%(source_ids)s::text[] is null or c.source_id = any(%(source_ids)s::text[]))
  and (not %(scoped)s or s.organization_id is null
       or (s.organization_id = %(organization_id)s
           and (s.document_id is null or s.document_id = %(document_id)s)))
order by distance, c.id
limit %(limit)s

-- name: search_rules
-- The rules nearest a query vector under one model, of one tenant's completed sources (optionally some, or those
-- visible in a scope).
select r.id, r.source_id, s.file_name, r.content, r.category, (e.embedding <=> %(vector)s::vector) as distance
from knowledge_rule_embeddings e
join knowledge_rules r on r.id = e.rule_id
join knowledge_sources s on s.id = r.source_id
where e.model = %(model)s and e.api_key_id = %(api_key_id)s and s.status = 'ready'
  and (%(source_ids)s::text[] is null or r.source_id = any(%(source_ids)s::text[]))
  and (not %(scoped)s or s.organization_id is null
       or (s.organization_id = %(organization_id)s
           and (s.document_id is null or s.document_id = %(document_id)s)))
order by distance, r.id
limit %(limit)s

-- name: recent_chunks
-- The most recently ingested chunks (the fallback when the query cannot be embedded).
select c.id, c.source_id, c.text from knowledge_chunks c
join knowledge_sources s on s.id = c.source_id
where c.api_key_id = %(api_key_id)s and s.status = 'ready'
  and (%(source_ids)s::text[] is null or c.source_id = any(%(source_ids)s::text[]))
order by s.updated_at desc, c.source_id, c.ordinal
limit %(limit)s

-- name: recent_rules
-- The most recently extracted rules (the fallback when the query cannot be embedded).
select r.id, r.source_id, r.content, r.category from knowledge_rules r
join knowledge_sources s on s.id = r.source_id
where r.api_key_id = %(api_key_id)s and s.status = 'ready'
  and (%(source_ids)s::text[] is null or r.source_id = any(%(source_ids)s::text[]))
order by s.updated_at desc, r.source_id, r.ordinal
limit %(limit)s

-- name: scoped_rules
-- The current rules of completed sources visible in a scope (key-wide, the organization's, the document's).
select r.id, r.source_id, r.content, r.category, r.ordinal, s.file_name
from knowledge_rules r
join knowledge_sources s on s.id = r.source_id
where r.api_key_id = %(api_key_id)s and s.status = 'ready'
  and (s.organization_id is null
       or (s.organization_id = %(organization_id)s
           and (s.document_id is null or s.document_id = %(document_id)s)))
order by s.created_at, r.source_id, r.ordinal
limit %(limit)s

-- name: updated_since
-- Whether any completed knowledge source of a key (not an extraction's file) was ingested or updated since a time.
select exists (
    select 1 from knowledge_sources
    where api_key_id = %(api_key_id)s and kind = 'upload' and status = 'ready'
      and (created_at >= %(since)s or updated_at >= %(since)s)
) as updated

-- name: outstanding_uploads
-- Upload URLs of a key that still hold a slot (not yet ingested, not expired).
select count(*) as n from knowledge_uploads
where api_key_id = %(api_key_id)s
  and ((status = 'pending' and expires_at > %(now)s)
       or (status = 'uploaded' and expires_at + interval '1 day' > %(now)s))

-- name: insert_upload
-- Mint an upload slot.
insert into knowledge_uploads (id, api_key_id, organization_id, document_id, mime_type, file_name, declared_size,
                               expires_at)
values (%(id)s, %(api_key_id)s, %(organization_id)s, %(document_id)s, %(mime_type)s, %(file_name)s,
        %(declared_size)s, %(expires_at)s)

-- name: store_upload
-- Store the bytes PUT to a pending, unexpired upload slot of the key: once (an uploaded slot is never rewritten).
update knowledge_uploads set content = %(content)s, status = 'uploaded'
where id = %(id)s and api_key_id = %(api_key_id)s and status = 'pending' and expires_at > %(now)s

-- name: upload_slot
-- An upload slot a signed PUT names: its state and declared size, without its bytes.
select status, declared_size, expires_at from knowledge_uploads
where id = %(id)s and api_key_id = %(api_key_id)s

-- name: stored_bytes
-- The bytes of originals an API key's knowledge holds: its sources' files and its uploaded, not yet ingested slots.
select (select coalesce(sum(size_bytes), 0) from knowledge_sources
        where api_key_id = %(api_key_id)s and content is not null)
     + (select coalesce(sum(octet_length(content)), 0) from knowledge_uploads
        where api_key_id = %(api_key_id)s and content is not null) as n

-- name: processing_in_workspace
-- How many knowledge ingests of a workspace's keys are queued or running (a bound on its backlog).
select count(*) as n from knowledge_sources s join api_keys k on k.id = s.api_key_id
where k.workspace_id = %(workspace_id)s and s.kind = 'upload' and s.status = 'processing'

-- name: touch_source
-- Note that a processing ingest is still waiting for a slot (the sweep of lost ingests counts from here).
update knowledge_sources set updated_at = now() where id = %(id)s and status = 'processing'

-- name: take_upload
-- Claim an uploaded slot for an ingest: its bytes, once (the row stays, ingested, so a second ingest is refused).
with claimed as (
    select id, content from knowledge_uploads
    where id = %(id)s and api_key_id = %(api_key_id)s and status = 'uploaded'
      and expires_at + interval '1 day' > %(now)s
    for update
)
update knowledge_uploads u set status = 'ingested', content = null
from claimed where u.id = claimed.id
returning claimed.content, u.mime_type, u.file_name, u.organization_id, u.document_id

-- name: get_upload
-- An upload slot of the key, without its bytes.
select id, organization_id, document_id, mime_type, status from knowledge_uploads
where id = %(id)s and api_key_id = %(api_key_id)s

-- name: drop_old_uploads
-- Delete upload slots past use (never ingested a day after expiry, ingested ones after %(ingested_before)s), a
-- batch at a time: their bytes must not outlive the URL that let them in.
with old as (
    select id from knowledge_uploads
    where (status <> 'ingested' and expires_at + interval '1 day' < %(now)s)
       or (status = 'ingested' and created_at < %(ingested_before)s)
    limit %(limit)s
    for update skip locked
)
delete from knowledge_uploads u using old where u.id = old.id

-- name: chunks_after
-- One batch of chunks in id order after an id (all tenants, or one), with the hash of their vector under a model.
select c.id, c.api_key_id, c.text, e.content_hash
from knowledge_chunks c
left join knowledge_chunk_embeddings e on e.chunk_id = c.id and e.model = %(model)s
where c.id > %(after)s and (%(only)s::text is null or c.api_key_id = %(only)s)
order by c.id limit %(limit)s

-- name: rules_after
-- One batch of rules in id order after an id (all tenants, or one), with the hash of their vector under a model.
select r.id, r.api_key_id, r.content as text, e.content_hash
from knowledge_rules r
left join knowledge_rule_embeddings e on e.rule_id = r.id and e.model = %(model)s
where r.id > %(after)s and (%(only)s::text is null or r.api_key_id = %(only)s)
order by r.id limit %(limit)s

-- name: lock_uploads
-- One key's upload slots at a time (for this transaction), so that two calls cannot both take the last slot.
select pg_advisory_xact_lock(hashtext('knowledge-uploads:' || %(api_key_id)s))

-- name: fail_lost_ingests
-- Ingests still processing long after every try could have ended (a worker lost, a job dropped): failed, so that
-- their status ends and they can be deleted.
update knowledge_sources
set status = 'failed', failure_reason = 'cloud-tasks-enqueue-failed', error = 'The ingest job did not finish.',
    updated_at = now()
where kind = 'upload' and status = 'processing' and updated_at < %(before)s
