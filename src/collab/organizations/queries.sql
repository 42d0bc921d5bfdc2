-- name: insert_organization
insert into organizations (api_key_id, id, name, created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(name)s, %(now)s, %(now)s)
on conflict do nothing
returning id

-- name: get_organization
select * from organizations where api_key_id = %(api_key_id)s and id = %(id)s

-- name: lock_organization
select * from organizations where api_key_id = %(api_key_id)s and id = %(id)s for update

-- name: rename_organization
update organizations set name = %(name)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s
returning id

-- name: set_disabled
update organizations set disabled = %(disabled)s, updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = any(%(ids)s)
returning id

-- name: list_organizations
select * from organizations
where api_key_id = %(api_key_id)s
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and (%(after_id)s::text is null or id > %(after_id)s)
order by id
limit %(limit)s

-- name: delete_organizations
delete from organizations where api_key_id = %(api_key_id)s and id = any(%(ids)s) returning id
