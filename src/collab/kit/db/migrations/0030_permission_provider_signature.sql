-- Whether an API key's permission provider must sign its answers (auth/generate_signature): null keeps the
-- default, required whenever an auth token is set (ADR 0051, Bounds).
alter table permission_providers add column require_signature boolean;
