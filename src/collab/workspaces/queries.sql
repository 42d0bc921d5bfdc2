-- name: lock_email
-- Serialise workspace creation per owner e-mail (case-insensitive) for the rest of the transaction.
select pg_advisory_xact_lock(hashtextextended(lower(%(email)s), 7340002))

-- name: workspaces_of_email
-- The workspaces an e-mail owns, oldest first.
select id, name, owner_id, plan, is_root from workspaces
where lower(owner_email) = lower(%(email)s)
order by created_at

-- name: insert_workspace
-- Create a workspace with its auth token's hash and sealed copy.
insert into workspaces (id, name, owner_email, owner_id, owner_name, owner_avatar,
                        auth_token_hash, auth_token_enc, is_root)
values (%(id)s, %(name)s, %(owner_email)s, %(owner_id)s, %(owner_name)s, %(owner_avatar)s,
        %(auth_token_hash)s, %(auth_token_enc)s, %(is_root)s)

-- name: insert_api_key
-- Create an API key in a workspace.
insert into api_keys (id, workspace_id, name, type, owner_email)
values (%(id)s, %(workspace_id)s, %(name)s, %(type)s, %(owner_email)s)

-- name: insert_auth_token
-- Store an API key's auth token (hash and sealed copy).
insert into auth_tokens (api_key_id, name, domains, token_hash, token_enc)
values (%(api_key_id)s, %(name)s, %(domains)s, %(token_hash)s, %(token_enc)s)

-- name: delete_auth_tokens
-- Remove every auth token of an API key (before a reset stores the new one).
delete from auth_tokens where api_key_id = %(api_key_id)s

-- name: get_workspace
-- A workspace's owner, plan and sealed auth token.
select id, name, owner_email, owner_id, owner_name, owner_avatar, auth_token_enc, plan
from workspaces where id = %(workspace_id)s

-- name: api_keys_of_workspace
-- A workspace's API keys, oldest first.
select id, name, type from api_keys where workspace_id = %(workspace_id)s order by created_at, id

-- name: api_key_of_workspace
-- The API key if it belongs to the workspace.
select id from api_keys where id = %(api_key_id)s and workspace_id = %(workspace_id)s

-- name: auth_tokens_of_key
-- An API key's auth tokens (sealed), in creation order.
select name, domains, token_enc from auth_tokens where api_key_id = %(api_key_id)s order by id

-- name: set_plan
-- Change a workspace's plan.
update workspaces set plan = %(plan)s where id = %(workspace_id)s

-- name: lock_api_key_config
-- An API key's feature settings, locked so concurrent updates apply in turn.
select enable_advanced_queries, webhook_config, activity_config, notification_config
from api_keys where id = %(api_key_id)s for update

-- name: api_key_config
-- An API key's feature settings.
select enable_advanced_queries, webhook_config, activity_config, notification_config
from api_keys where id = %(api_key_id)s

-- name: api_key_config_view
-- An API key's advanced-queries switch and its stored AI provider keys (provider and last four characters only).
select k.enable_advanced_queries,
       coalesce((select json_agg(json_build_object('provider', p.provider, 'last4', p.last4,
                                                    'key_set', p.key_enc is not null, 'base_url_host',
                                                    p.base_url_host, 'model', p.model) order by p.provider)
                 from ai_provider_keys p where p.api_key_id = k.id), '[]') as provider_keys
from api_keys k where k.id = %(api_key_id)s

-- name: set_advanced_queries
-- Switch advanced queries on or off for an API key.
update api_keys set enable_advanced_queries = %(enabled)s where id = %(api_key_id)s

-- name: set_webhook_config
-- Replace an API key's webhook settings.
update api_keys set webhook_config = %(config)s where id = %(api_key_id)s

-- name: set_activity_config
-- Replace an API key's activity settings.
update api_keys set activity_config = %(config)s where id = %(api_key_id)s

-- name: set_notification_config
-- Replace an API key's notification settings.
update api_keys set notification_config = %(config)s where id = %(api_key_id)s

-- name: upsert_provider_key
-- Store a customer's AI provider key (sealed), or its own model server (base URL sealed, key where it wants one,
-- model), replacing what was stored for that provider.
insert into ai_provider_keys (api_key_id, provider, key_enc, last4, base_url_enc, base_url_host, model)
values (%(api_key_id)s, %(provider)s, %(key_enc)s, %(last4)s, %(base_url_enc)s, %(base_url_host)s, %(model)s)
on conflict (api_key_id, provider)
do update set key_enc = excluded.key_enc, last4 = excluded.last4, base_url_enc = excluded.base_url_enc,
              base_url_host = excluded.base_url_host, model = excluded.model, updated_at = now()

-- name: delete_provider_key
-- Remove the customer's key for one AI provider.
delete from ai_provider_keys where api_key_id = %(api_key_id)s and provider = %(provider)s

-- name: provider_key
-- The sealed customer key for one AI provider (with its own server's sealed base URL and model, if self-hosted).
select key_enc, base_url_enc, model from ai_provider_keys where api_key_id = %(api_key_id)s and provider = %(provider)s

-- name: set_workspace_token
-- Replace the workspace's auth token (hash and sealed copy); the old one stops authenticating at once.
update workspaces set auth_token_hash = %(auth_token_hash)s, auth_token_enc = %(auth_token_enc)s
where id = %(workspace_id)s

-- name: allowed_domains
-- An API key's allowed domains (bare, in the order added); none when the key does not exist.
select allowed_domains from api_keys where id = %(api_key_id)s

-- name: lock_allowed_domains
-- An API key's allowed domains, locked so concurrent adds and deletes apply in turn.
select allowed_domains from api_keys where id = %(api_key_id)s for update

-- name: set_allowed_domains
-- Replace an API key's allowed domains.
update api_keys set allowed_domains = %(domains)s where id = %(api_key_id)s

-- name: rename_api_key
-- Rename an API key of the workspace; its id when it exists there.
update api_keys set name = %(name)s where id = %(api_key_id)s and workspace_id = %(workspace_id)s returning id

-- name: copy_api_key_config
-- Copy an API key's settings (features, webhook services, allowed domains) onto another key of the same workspace.
update api_keys t set enable_advanced_queries = s.enable_advanced_queries, webhook_config = s.webhook_config,
                      activity_config = s.activity_config, notification_config = s.notification_config,
                      allowed_domains = s.allowed_domains
from api_keys s
where s.id = %(source)s and t.id = %(target)s and s.workspace_id = %(workspace_id)s
  and t.workspace_id = %(workspace_id)s

-- name: basic_webhook_token
-- The sealed auth token of an API key's basic webhook service.
select basic_webhook_token_enc from api_keys where id = %(api_key_id)s

-- name: set_basic_webhook_token
-- Replace the sealed auth token of an API key's basic webhook service (null: none).
update api_keys set basic_webhook_token_enc = %(token_enc)s where id = %(api_key_id)s
