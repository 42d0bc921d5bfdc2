-- Review agents and agent groups (issue #38 items 1, 2 and 5; ADR 0054), Velt's `agents/*` and `agents/groups/*`.
-- An agent's identity (name, description, enabled, metadata) lives on its row and changes in place; its behaviour
-- (instructions, context gathering, execution, post-processing, input, scope, setup) lives in numbered versions,
-- one immutable row each: `agents/version/update` adds version N+1, `agents/versions/restore` drops version N.

create table agents (
    api_key_id        text not null references api_keys (id) on delete cascade,
    id                text not null,
    name              text not null,
    description       text not null,
    enabled           boolean not null,
    metadata          jsonb,
    -- The current version's number: the row of agent_versions that `agents/get` merges in.
    version           integer not null,
    -- Execution counters shown by the agents/get listing; the executions work (issue #38 item 3) keeps them.
    execution_count   bigint not null default 0,
    last_executed_at  bigint,
    created_at        bigint not null,
    updated_at        bigint not null,
    primary key (api_key_id, id)
);
create index agents_created_idx on agents (api_key_id, created_at, id);

create table agent_versions (
    api_key_id    text not null,
    agent_id      text not null,
    version       integer not null,
    -- The behavioural fields as stored: auth secrets sealed (AES-GCM, bound to the API key and agent).
    config        jsonb not null,
    -- Bytes of `config` as JSON when written: versions/list cuts its pages by bytes in SQL.
    config_bytes  integer not null,
    created_at    bigint not null,
    primary key (api_key_id, agent_id, version),
    constraint agent_versions_agent_fkey foreign key (api_key_id, agent_id)
        references agents (api_key_id, id) on delete cascade
);

-- A version is a snapshot: it is added or dropped whole, never changed.
create function agent_versions_immutable() returns trigger language plpgsql as $$
begin
    raise exception 'agent versions are immutable (add a version instead)';
end
$$;
create trigger agent_versions_immutable before update on agent_versions
    for each row execute function agent_versions_immutable();

create table agent_groups (
    api_key_id   text not null references api_keys (id) on delete cascade,
    id           text not null,
    name         text not null,
    description  text,
    -- As sent at creation with the API key merged in as `apiKey`; never changed afterwards (Velt's rule).
    metadata     jsonb not null,
    created_at   bigint not null,
    updated_at   bigint not null,
    primary key (api_key_id, id)
);
create index agent_groups_created_idx on agent_groups (api_key_id, created_at, id);

-- One row per (group, agent), in the order the agents were added; deleting an agent takes it out of every group.
create table agent_group_members (
    api_key_id  text not null,
    group_id    text not null,
    agent_id    text not null,
    position    integer not null,
    primary key (api_key_id, group_id, agent_id),
    constraint agent_group_members_group_fkey foreign key (api_key_id, group_id)
        references agent_groups (api_key_id, id) on delete cascade,
    constraint agent_group_members_agent_fkey foreign key (api_key_id, agent_id)
        references agents (api_key_id, id) on delete cascade
);
create index agent_group_members_position_idx on agent_group_members (api_key_id, group_id, position);
create index agent_group_members_agent_idx on agent_group_members (api_key_id, agent_id);
