-- Access types (issue #37, ADR 0051): who a folder or document is open to, Velt's three: `public` (every user of
-- the API key may view it), `organizationPrivate` (organization roles reach it: collab's rule before access types)
-- and `restricted` (only grants on it or on a folder holding it). Null inherits: a document takes its folder's, a
-- folder its parent's, the top the organization's rule (organizationPrivate). A document can also be disabled alone.
alter table folders add column access_type text
    check (access_type in ('public', 'organizationPrivate', 'restricted'));
alter table documents add column access_type text
    check (access_type in ('public', 'organizationPrivate', 'restricted')),
    add column disabled boolean not null default false;

-- The permission provider (Velt's real-time permission provider): collab asks the customer's backend whether a user
-- may reach a resource, and its answer replaces the grants. The endpoint's auth token is sealed like every secret.
create table permission_providers (
    api_key_id      text primary key references api_keys (id) on delete cascade,
    enabled         boolean not null default false,
    url             text not null default '',
    auth_token_enc  bytea,
    updated_at      bigint not null
);
