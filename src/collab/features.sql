-- name: delete_feature_rows
-- Remove one feature table's rows of some documents of an organization (ids null: of all its documents).
delete from {table}
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s
  and (%(ids)s::text[] is null or document_id = any(%(ids)s))
