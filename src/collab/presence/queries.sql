-- name: upsert_presence
-- A user seen again is online (or the status sent); name and e-mail are kept when not sent.
insert into presence (api_key_id, organization_id, document_id, user_id, name, email, status, last_seen)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(user_id)s, %(name)s, %(email)s, %(status)s,
        %(last_seen)s)
on conflict (api_key_id, organization_id, document_id, user_id) do update set
    name = coalesce(excluded.name, presence.name),
    email = coalesce(excluded.email, presence.email),
    status = excluded.status,
    last_seen = excluded.last_seen

-- name: list_presence
-- Everyone seen on a document, by user id.
select user_id, name, email, status, last_seen from presence
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
order by user_id

-- name: delete_presence
-- Remove some users' presence on a document.
delete from presence
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and user_id = any(%(user_ids)s)

-- name: forget_user
-- User-data deletion: the users' presence, in some organizations or in all.
delete from presence
where api_key_id = %(api_key_id)s and user_id = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or organization_id = any(%(organization_ids)s))
