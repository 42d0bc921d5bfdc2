-- User tokens are signed with a key derived per API key from the secret and this version (no private key
-- is stored); auth/tokenkeys/rotate bumps it, and tokens of the version before still verify.
alter table api_keys add column token_key_version int not null default 1 check (token_key_version >= 1);
