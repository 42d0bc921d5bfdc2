-- Agent findings are suggestions at the thread's root (issue #51): a thread's kind (Velt's `type`, comment or
-- suggestion), how it was made (`sourceType`: rest-api or agent), the agent block of its first comment as the thread
-- carries it, and a suggestion's lifecycle payload (`suggestion`, its `status` pending, accepted or rejected). The
-- stored size counts the two new blocks. An execution keeps what its page fetch got (`crawlerResults`).
alter table comment_annotations
    add column kind text not null default 'comment' check (kind in ('comment', 'suggestion')),
    add column source_type text not null default 'rest-api' check (source_type in ('rest-api', 'agent')),
    add column agent jsonb,
    add column suggestion jsonb;

-- The threads agent executions wrote before: their classification was kept in their context.
update comment_annotations a
set kind = 'suggestion', source_type = 'agent',
    agent = coalesce((select c.agent from comments c
                      where c.api_key_id = a.api_key_id and c.organization_id = a.organization_id
                        and c.annotation_id = a.id
                      order by c.id limit 1),
                     jsonb_build_object('agentId', a.context ->> 'agentId', 'executionId', a.context ->> 'executionId')),
    suggestion = jsonb_build_object('status', case when a.status_type <> 'terminal' then 'pending'
                                                   when lower(a.status) = 'rejected' then 'rejected'
                                                   else 'accepted' end)
where a.context ->> 'sourceType' = 'agent' and a.context ->> 'type' = 'suggestion';

alter table comment_annotations drop column bytes;
alter table comment_annotations add column bytes int generated always as (
    400 + comment_string_bytes(id) + comment_string_bytes(document_id) + comment_string_bytes(organization_id)
    + comment_json_bytes(location) + comment_json_bytes(target_element) + comment_string_bytes(priority)
    + comment_json_bytes(assigned_to) + comment_json_bytes(from_user) + comment_json_bytes(context)
    + comment_strings_bytes(visible_user_ids) + comment_string_bytes(resolved_by)
    + comment_json_bytes(status_meta) + comment_json_bytes(priority_meta)
    + comment_json_bytes(agent) + comment_json_bytes(suggestion)
) stored;

alter table agent_executions add column crawler_results jsonb;
