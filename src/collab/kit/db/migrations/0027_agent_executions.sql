-- Agent executions (issue #38 item 3; ADR 0055), Velt's `agents/execution/*` and `agents/analytics/get`.
-- One row per run of an agent on a document: the agent's behaviour pinned as it was at the start (a later version,
-- or a restore that drops this one, does not change what a running execution does), its status, its summary and
-- per-URL results, and the model's token usage (what analytics adds up).

create table agent_executions (
    api_key_id             text not null references api_keys (id) on delete cascade,
    id                     text not null,
    -- No foreign key to agents: an execution's history outlives a deleted agent, as Velt's does.
    agent_id               text not null,
    agent_name             text not null,
    agent_version          integer not null,
    -- The pinned behaviour as stored (auth secrets sealed, bound to the API key and agent).
    behaviour              jsonb not null,
    organization_id        text not null,
    document_id            text not null,
    -- What the run was asked: seedUrl, crossPageExecute, maxUrlsToProcess, deviceType (Velt's `config`), and the
    -- request's annotationVisibility, userContext and aiConfig.
    request                jsonb not null,
    trigger                text not null,
    workflow_execution_id  text,
    previous_execution_id  text,
    ran_by                 jsonb,
    status                 text not null
        check (status in ('running', 'passed', 'failed', 'partial', 'error', 'skipped')),
    started_at             bigint not null,
    completed_at           bigint,
    error                  jsonb,
    results_summary        jsonb,
    results                jsonb,
    llm_model              text,
    request_count          integer not null default 0,
    prompt_tokens          bigint not null default 0,
    completion_tokens      bigint not null default 0,
    primary key (api_key_id, id)
);
-- At most one running execution per agent and document: a second run is ALREADY_EXISTS naming the first.
create unique index agent_executions_running_idx on agent_executions (api_key_id, agent_id, organization_id, document_id)
    where status = 'running';
create index agent_executions_agent_idx on agent_executions (api_key_id, agent_id, started_at desc, id desc);
create index agent_executions_document_idx
    on agent_executions (api_key_id, organization_id, document_id, started_at desc, id desc);
-- The sweep's scan: running executions past their time budget.
create index agent_executions_started_idx on agent_executions (started_at) where status = 'running';
