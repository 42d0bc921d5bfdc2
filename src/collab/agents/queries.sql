-- name: lock_agents
-- Hold the API key's agents until the transaction ends: creations and new versions run one at a time (the agent
-- cap, the byte budget of their versions).
select pg_advisory_xact_lock(hashtextextended(%(api_key_id)s || ':agents', 0))

-- name: count_agents
-- How many custom agents the API key has.
select count(*) as n from agents where api_key_id = %(api_key_id)s

-- name: version_bytes
-- Bytes of behaviour the API key's agents keep, every version counted.
select coalesce(sum(config_bytes), 0)::bigint as n from agent_versions where api_key_id = %(api_key_id)s

-- name: insert_agent
-- Create an agent's row at its version 1.
insert into agents (api_key_id, id, name, description, enabled, metadata, version, created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(name)s, %(description)s, %(enabled)s, %(metadata)s, 1, %(now)s, %(now)s)

-- name: insert_version
-- Add one immutable version of an agent's behaviour.
insert into agent_versions (api_key_id, agent_id, version, config, config_bytes, created_at)
values (%(api_key_id)s, %(agent_id)s, %(version)s, %(config)s, %(config_bytes)s, %(now)s)

-- name: get_agent
-- An agent with its current version's behaviour.
select a.*, v.config
from agents a
join agent_versions v on v.api_key_id = a.api_key_id and v.agent_id = a.id and v.version = a.version
where a.api_key_id = %(api_key_id)s and a.id = %(id)s

-- name: lock_agent
-- Lock an agent's row for the rest of the transaction (its versions change one at a time); its id.
select id from agents where api_key_id = %(api_key_id)s and id = %(id)s for update

-- name: agent_exists
-- Whether the agent exists.
select 1 as found from agents where api_key_id = %(api_key_id)s and id = %(id)s

-- name: existing_agents
-- Which of these agent ids exist.
select id from agents where api_key_id = %(api_key_id)s and id = any(%(ids)s)

-- name: update_identity
-- Change an agent's name, description or enabled flag (null keeps the field); the id when the agent exists.
update agents
set name = coalesce(%(name)s, name), description = coalesce(%(description)s, description),
    enabled = coalesce(%(enabled)s, enabled), updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s
returning id

-- name: set_version
-- Point an agent at another version (and replace its metadata when asked to).
update agents
set version = %(version)s, metadata = case when %(set_metadata)s then %(metadata)s else metadata end,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s

-- name: version_exists
-- Whether a version of an agent is still kept.
select 1 as found from agent_versions
where api_key_id = %(api_key_id)s and agent_id = %(agent_id)s and version = %(version)s

-- name: drop_versions
-- Drop an agent's versions numbered from `first` to `last` (restore drops the current one, the cap the oldest).
delete from agent_versions
where api_key_id = %(api_key_id)s and agent_id = %(agent_id)s and version between %(first)s and %(last)s

-- name: list_versions
-- A page of an agent's versions, newest first, cut where the rows before one pass the byte budget.
select * from (
    select v.version, v.config, v.created_at, count(*) over () as fetched,
           sum(v.config_bytes) over (order by v.version desc) - v.config_bytes as before_bytes
    from agent_versions v
    where v.api_key_id = %(api_key_id)s and v.agent_id = %(agent_id)s
      and (%(before)s::integer is null or v.version < %(before)s)
    order by v.version desc
    limit %(limit)s
) page
where before_bytes < %(budget)s
order by version desc

-- name: list_agents
-- A page of the API key's agents for the listing, oldest first; agents marked metadata.internal are left out.
select id, name, description, enabled, version, execution_count, last_executed_at, created_at
from agents
where api_key_id = %(api_key_id)s
  and not coalesce(metadata @> '{"internal": true}', false)
  and (%(after_at)s::bigint is null or (created_at, id) > (%(after_at)s, %(after_id)s))
order by created_at, id
limit %(limit)s

-- name: list_group_agents
-- A page of a group's agents for the listing, in the group's order; agents marked metadata.internal are left out.
select a.id, a.name, a.description, a.enabled, a.version, a.execution_count, a.last_executed_at, m.position
from agent_group_members m
join agents a on a.api_key_id = m.api_key_id and a.id = m.agent_id
where m.api_key_id = %(api_key_id)s and m.group_id = %(group_id)s
  and not coalesce(a.metadata @> '{"internal": true}', false)
  and (%(after_position)s::integer is null or m.position > %(after_position)s)
order by m.position
limit %(limit)s

-- name: delete_agent
-- Delete an agent with its versions and memberships, touching the groups it leaves; the id when it existed.
with left_groups as (
    update agent_groups g set updated_at = %(now)s
    from agent_group_members m
    where m.api_key_id = %(api_key_id)s and m.agent_id = %(id)s
      and g.api_key_id = m.api_key_id and g.id = m.group_id
    returning g.id
)
delete from agents where api_key_id = %(api_key_id)s and id = %(id)s
returning id

-- name: lock_groups
-- Hold the API key's agent groups until the transaction ends: creations run one at a time (the group cap).
select pg_advisory_xact_lock(hashtextextended(%(api_key_id)s || ':agent-groups', 0))

-- name: count_groups
-- How many agent groups the API key has.
select count(*) as n from agent_groups where api_key_id = %(api_key_id)s

-- name: insert_group
-- Create an agent group.
insert into agent_groups (api_key_id, id, name, description, metadata, created_at, updated_at)
values (%(api_key_id)s, %(id)s, %(name)s, %(description)s, %(metadata)s, %(now)s, %(now)s)

-- name: get_group
-- An agent group with its members' ids in order.
select g.*, array(select m.agent_id from agent_group_members m
                  where m.api_key_id = g.api_key_id and m.group_id = g.id order by m.position) as agent_ids
from agent_groups g
where g.api_key_id = %(api_key_id)s and g.id = %(id)s

-- name: lock_group
-- Lock an agent group's row for the rest of the transaction (its membership changes one at a time); its id.
select id from agent_groups where api_key_id = %(api_key_id)s and id = %(id)s for update

-- name: group_exists
-- Whether the agent group exists.
select 1 as found from agent_groups where api_key_id = %(api_key_id)s and id = %(id)s

-- name: list_groups
-- A page of the API key's agent groups with their member counts, oldest first.
select g.*, (select count(*) from agent_group_members m
             where m.api_key_id = g.api_key_id and m.group_id = g.id) as agent_count
from agent_groups g
where g.api_key_id = %(api_key_id)s
  and (%(after_at)s::bigint is null or (g.created_at, g.id) > (%(after_at)s, %(after_id)s))
order by g.created_at, g.id
limit %(limit)s

-- name: update_group
-- Change a group's name or description (each only when asked to); the id when the group exists.
update agent_groups
set name = coalesce(%(name)s, name),
    description = case when %(set_description)s then %(description)s else description end,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and id = %(id)s
returning id

-- name: touch_group
-- Mark a group as changed now.
update agent_groups set updated_at = %(now)s where api_key_id = %(api_key_id)s and id = %(id)s

-- name: delete_group
-- Delete an agent group and its memberships (the agents stay); the id when it existed.
delete from agent_groups where api_key_id = %(api_key_id)s and id = %(id)s returning id

-- name: add_members
-- Append agents to a group after its last member, in the order given; those already members are skipped.
insert into agent_group_members (api_key_id, group_id, agent_id, position)
select %(api_key_id)s, %(group_id)s, a.id,
       coalesce((select max(position) from agent_group_members
                 where api_key_id = %(api_key_id)s and group_id = %(group_id)s), 0) + a.n
from unnest(%(agent_ids)s::text[]) with ordinality as a (id, n)
on conflict do nothing
returning agent_id

-- name: remove_members
-- Take agents out of a group; the ids that were members.
delete from agent_group_members
where api_key_id = %(api_key_id)s and group_id = %(group_id)s and agent_id = any(%(agent_ids)s)
returning agent_id
