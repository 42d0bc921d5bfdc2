-- name: workspace_token_hash
-- The hash of a workspace's auth token: a session lives only while it is the one the owner signed in with.
select auth_token_hash from workspaces where id = %(workspace_id)s

-- name: key_of_workspace
-- One API key of the workspace as a tenant (with its token signing key version and allowed domains); nothing for
-- another's key.
select id, workspace_id, token_key_version, allowed_domains from api_keys
where id = %(api_key_id)s and workspace_id = %(workspace_id)s
