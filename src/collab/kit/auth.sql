-- name: tenant_tokens
select k.id as api_key_id, k.workspace_id, t.token_hash
from api_keys k
left join auth_tokens t on t.api_key_id = k.id
where k.id = %(api_key_id)s

-- name: workspace_token
select id, auth_token_hash from workspaces where id = %(workspace_id)s
