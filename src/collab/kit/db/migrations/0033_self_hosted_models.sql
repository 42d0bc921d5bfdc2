-- Models a team hosts itself (ADR 0061): an Ollama or OpenAI-compatible server per API key, its base URL sealed
-- like a provider key, the model it answers with, and a key only where the server wants one.

alter table ai_provider_keys drop constraint ai_provider_keys_provider_check;
alter table ai_provider_keys
    add constraint ai_provider_keys_provider_check
        check (provider in ('openai', 'anthropic', 'gemini', 'ollama', 'openai-compatible')),
    alter column key_enc drop not null,
    add column base_url_enc  bytea,
    add column base_url_host text,
    add column model         text,
    add constraint ai_provider_keys_self_hosted_check
        check ((provider in ('ollama', 'openai-compatible')) = (base_url_enc is not null)),
    add constraint ai_provider_keys_key_check check (key_enc is not null or base_url_enc is not null);
