-- name: insert_organization
-- Create an organization; nothing when the id exists.
insert into organizations (api_key_id, id, name, created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(name)s, %(now)s, %(now)s)
on conflict do nothing
returning id

-- name: get_organization
-- An organization by id.
select * from organizations where api_key_id = %(api_key_id)s and id = %(id)s

-- name: lock_organization
-- An organization by id, locked for the rest of the transaction.
select * from organizations where api_key_id = %(api_key_id)s and id = %(id)s for update

-- name: rename_organization
-- Change an organization's name.
update organizations set name = %(name)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s
returning id

-- name: set_disabled
-- Disable or enable organizations; the ids that exist.
update organizations set disabled = %(disabled)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = any(%(ids)s)
returning id

-- name: list_organizations
-- A page of organizations by id, optionally only some ids.
select * from organizations
where api_key_id = %(api_key_id)s
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and (%(after_id)s::text is null or id > %(after_id)s)
order by id
limit %(limit)s

-- name: delete_organizations
-- Delete organizations; the ids deleted.
delete from organizations where api_key_id = %(api_key_id)s and id = any(%(ids)s) returning id
