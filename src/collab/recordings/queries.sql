-- name: lock_annotation
-- Writers of one annotation take turns: each sees the document it is on and takes the next version number.
select pg_advisory_xact_lock(hashtextextended(%(api_key_id)s || '/' || %(organization_id)s || '/' || %(annotation_id)s,
                                              7340006))

-- name: recording_document
-- The document an annotation's recording belongs to (every version shares it).
select document_id from recordings
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
order by version desc
limit 1

-- name: insert_version
-- Add the next version of an annotation's recording; its version number.
insert into recordings (api_key_id, organization_id, document_id, annotation_id, version, recording_type, mode,
                        display_name, duration_ms, attachments, from_user, created_at)
select %(api_key_id)s, %(organization_id)s, %(document_id)s, %(annotation_id)s, coalesce(max(version), 0) + 1,
       %(recording_type)s, %(mode)s, %(display_name)s, %(duration_ms)s, %(attachments)s, %(from_user)s, %(now)s
from recordings
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
returning version

-- name: list_latest
-- The latest version of each annotation, in annotationId order: a page by key (at most `limit`), then only those
-- that start within `budget` bytes by a cheap estimate (sizes as stored, compressed attachments counted 10 times);
-- `fetched` is how many the page had by key. The exact cut is made on the records as rendered.
with page as (
    select distinct on (annotation_id) annotation_id, version,
           octet_length(annotation_id) + octet_length(document_id) + octet_length(display_name)
           + pg_column_size(attachments) * case when pg_column_compression(attachments) is null then 1 else 10 end
           as bytes
    from recordings
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
      and (%(document_id)s::text is null or document_id = %(document_id)s)
      and (%(annotation_ids)s::text[] is null or annotation_id = any(%(annotation_ids)s))
      and (%(after_id)s::text is null or annotation_id > %(after_id)s)
    order by annotation_id, version desc
    limit %(limit)s
), sized as (
    select annotation_id, version, count(*) over () as fetched,
           sum(bytes) over (order by annotation_id rows unbounded preceding) - bytes as before
    from page
)
select r.*, s.fetched from sized s
-- By key, row by row (offset 0 keeps the planner from trading the index for a scan of the tenant's rows).
cross join lateral (
    select * from recordings r
    where r.api_key_id = %(api_key_id)s and r.organization_id = %(organization_id)s
      and r.annotation_id = s.annotation_id and r.version = s.version
    offset 0
) r
where s.before < %(budget)s
order by s.annotation_id

-- name: delete_recordings
-- Delete every version of some annotations' recordings; the annotations deleted.
delete from recordings
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = any(%(annotation_ids)s)
returning annotation_id

-- name: forget_user
-- The versions the users recorded; an annotation others added versions to keeps those.
delete from recordings
where api_key_id = %(api_key_id)s and from_user ->> 'userId' = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
