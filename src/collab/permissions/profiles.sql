-- name: record_user
-- Create the profile of a user a grant or a token names, or change the name and e-mail given (null keeps the stored one).
insert into users (api_key_id, id, name, email, created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(name)s, %(email)s, %(now)s, %(now)s)
on conflict (api_key_id, id) do update
set name = coalesce(excluded.name, users.name), email = coalesce(excluded.email, users.email),
    updated_at = excluded.updated_at
