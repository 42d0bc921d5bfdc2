-- Velt's workspace operations (ADR 0049): an API key's allowed domains (the browser origins its realtime sockets
-- and console pages accept; empty allows every origin), and Velt's basic webhook service, delivered by the advanced
-- webhook engine through endpoints of kind 'basic' (hidden from the advanced endpoint operations).
alter table api_keys add column allowed_domains text[] not null default '{}';
-- The basic webhook service's auth token (sent as `Authorization: Basic <token>`), sealed like every secret.
alter table api_keys add column basic_webhook_token_enc bytea;
alter table webhook_endpoints add column kind text not null default 'advanced' check (kind in ('advanced', 'basic'));
-- A basic endpoint is authenticated by the service's auth token (Authorization: Basic), not signed.
alter table webhook_endpoints alter column secret_enc drop not null;
alter table webhook_endpoints add constraint webhook_endpoints_signed check (kind = 'basic' or secret_enc is not null);
