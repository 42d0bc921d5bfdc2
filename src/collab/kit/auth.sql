-- name: tenant_tokens
-- The API key's tenant, the version of its token signing key, and the hashes of its auth tokens.
select k.id as api_key_id, k.workspace_id, k.token_key_version, t.token_hash
from api_keys k
left join auth_tokens t on t.api_key_id = k.id
where k.id = %(api_key_id)s

-- name: workspace_token
-- The workspace and the hash of its auth token.
select id, auth_token_hash from workspaces where id = %(workspace_id)s

-- name: rotate_token_key
-- Start signing the API key's user tokens with a new key version; the old one still verifies.
update api_keys set token_key_version = token_key_version + 1
where id = %(api_key_id)s
returning token_key_version
