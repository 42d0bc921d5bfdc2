-- name: lock_executions
-- Hold the workspace's execution starts until the transaction ends: the running cap counts one start at a time.
select pg_advisory_xact_lock(hashtextextended(%(workspace_id)s || ':agent-executions', 0))

-- name: count_running
-- How many executions of the workspace's API keys are running.
select count(*) as n
from agent_executions x
join api_keys k on k.id = x.api_key_id
where k.workspace_id = %(workspace_id)s and x.status = 'running'

-- name: prune_executions
-- Drop the API key's oldest finished executions past the newest `keep` of them, a batch at a time.
delete from agent_executions x
using (
    select id from agent_executions
    where api_key_id = %(api_key_id)s and status <> 'running'
    order by started_at desc, id desc
    offset %(keep)s
    limit %(batch)s
) doomed
where x.api_key_id = %(api_key_id)s and x.id = doomed.id

-- name: running_on
-- The running execution of this agent on this document, if any.
select id from agent_executions
where api_key_id = %(api_key_id)s and agent_id = %(agent_id)s and organization_id = %(organization_id)s
  and document_id = %(document_id)s and status = 'running'

-- name: latest_on
-- The latest execution of this agent on this document (a re-run names it as its previous execution).
select id from agent_executions
where api_key_id = %(api_key_id)s and agent_id = %(agent_id)s and organization_id = %(organization_id)s
  and document_id = %(document_id)s
order by started_at desc, id desc
limit 1

-- name: insert_execution
-- Start an execution (or record a skipped one); the id, or nothing when the agent already runs on the document.
insert into agent_executions (api_key_id, id, agent_id, agent_name, agent_version, behaviour, organization_id,
                              document_id, request, trigger, workflow_execution_id, previous_execution_id, ran_by,
                              status, started_at, completed_at, results_summary)
values (%(api_key_id)s, %(id)s, %(agent_id)s, %(agent_name)s, %(agent_version)s, %(behaviour)s, %(organization_id)s,
        %(document_id)s, %(request)s, %(trigger)s, %(workflow_execution_id)s, %(previous_execution_id)s, %(ran_by)s,
        %(status)s, %(now)s, %(completed_at)s, %(results_summary)s)
on conflict (api_key_id, agent_id, organization_id, document_id) where status = 'running' do nothing
returning id

-- name: count_run
-- Count a started execution on its agent.
update agents set execution_count = execution_count + 1, last_executed_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(agent_id)s

-- name: get_execution
-- One execution.
select * from agent_executions where api_key_id = %(api_key_id)s and id = %(id)s

-- name: record_usage
-- Add one model call's tokens to a running execution.
update agent_executions
set llm_model = %(llm_model)s, request_count = request_count + 1,
    prompt_tokens = prompt_tokens + %(prompt_tokens)s, completion_tokens = completion_tokens + %(completion_tokens)s
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: finish_execution
-- End a running execution with its status, summary, results, error and what its page fetch got; the id when it was
-- still running.
update agent_executions
set status = %(status)s, completed_at = %(now)s, results_summary = %(results_summary)s, results = %(results)s,
    error = %(error)s, crawler_results = %(crawler_results)s
where api_key_id = %(api_key_id)s and id = %(id)s and status = 'running'
returning id

-- name: sweep_overdue
-- End as `error` every execution still running past its time budget (its worker died or its job was cancelled).
update agent_executions
set status = 'error', completed_at = %(now)s, error = %(error)s,
    results_summary = coalesce(results_summary, '{}'::jsonb) || jsonb_build_object('summary', %(message)s::text)
where status = 'running' and started_at < %(before)s
returning api_key_id, id

-- name: list_executions
-- A page of executions, newest first: one agent's, one document's, or one agent's on one document. What the listing
-- shows only: not the pinned configuration (up to 1 MiB each) nor the per-URL results.
select id, agent_id, agent_name, agent_version, organization_id, document_id, request, trigger, workflow_execution_id,
       previous_execution_id, ran_by, status, started_at, completed_at, error, results_summary, llm_model,
       prompt_tokens, completion_tokens
from agent_executions
where api_key_id = %(api_key_id)s
  and (%(agent_id)s::text is null or agent_id = %(agent_id)s)
  and (%(organization_id)s::text is null or (organization_id = %(organization_id)s and document_id = %(document_id)s))
  and (%(after_at)s::bigint is null or (started_at, id) < (%(after_at)s, %(after_id)s))
order by started_at desc, id desc
limit %(limit)s

-- name: count_executions
-- The API key's executions, optionally of one status.
select count(*) as n from agent_executions
where api_key_id = %(api_key_id)s and (%(status)s::text is null or status = %(status)s)

-- name: count_by_agent
-- Executions per agent of these ids (optionally of one status); agents with none are absent.
select agent_id, count(*) as n from agent_executions
where api_key_id = %(api_key_id)s and agent_id = any(%(agent_ids)s)
  and (%(status)s::text is null or status = %(status)s)
group by agent_id

-- name: usage_by_month
-- Model calls and tokens by UTC year, month and model, of one agent's executions or all of them.
select to_char(to_timestamp(started_at / 1000.0) at time zone 'UTC', 'YYYY') as year,
       to_char(to_timestamp(started_at / 1000.0) at time zone 'UTC', 'MM') as month,
       llm_model, sum(request_count)::bigint as requests, sum(prompt_tokens)::bigint as prompt_tokens,
       sum(completion_tokens)::bigint as completion_tokens
from agent_executions
where api_key_id = %(api_key_id)s and llm_model is not null
  and (%(agent_id)s::text is null or agent_id = %(agent_id)s)
group by 1, 2, 3
order by 1, 2, 3

-- name: execution_counts
-- Each agent's execution count and last start (one agent's when named); agents never run are absent.
select id, execution_count, last_executed_at from agents
where api_key_id = %(api_key_id)s and execution_count > 0 and (%(agent_id)s::text is null or id = %(agent_id)s)
order by id
