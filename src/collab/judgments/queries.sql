-- name: activities
select * from activities where api_key_id = %(api_key_id)s and id = any(%(ids)s)

-- name: delete_judgments
delete from judgments where api_key_id = %(api_key_id)s and id = any(%(ids)s)

-- name: upsert_judgment
insert into judgments (api_key_id, id, organization_id, document_id, annotation_id, decision, judge_type,
                       reasoning, content, content_type, reviewer_id, confidence, action_user, agent, created_at)
values (%(api_key_id)s, %(id)s, %(organization_id)s, %(document_id)s, %(annotation_id)s, %(decision)s,
        %(judge_type)s, %(reasoning)s, %(content)s, %(content_type)s, %(reviewer_id)s, %(confidence)s,
        %(action_user)s, %(agent)s, %(created_at)s)
on conflict (api_key_id, id) do update set
    organization_id = excluded.organization_id, document_id = excluded.document_id,
    annotation_id = excluded.annotation_id, decision = excluded.decision, judge_type = excluded.judge_type,
    reasoning = excluded.reasoning, content = excluded.content, content_type = excluded.content_type,
    reviewer_id = excluded.reviewer_id, confidence = excluded.confidence, action_user = excluded.action_user,
    agent = excluded.agent, created_at = excluded.created_at

-- name: embedding_hashes
select judgment_id, kind, content_hash from judgment_embeddings
where api_key_id = %(api_key_id)s and model = %(model)s and judgment_id = any(%(ids)s)

-- name: upsert_embeddings
insert into judgment_embeddings (api_key_id, judgment_id, kind, model, content_hash, organization_id, document_id, embedding)
select %(api_key_id)s, r.judgment_id, r.kind, %(model)s, r.content_hash, r.organization_id, r.document_id, r.embedding::vector
from unnest(%(judgment_ids)s::text[], %(kinds)s::text[], %(content_hashes)s::text[], %(organization_ids)s::text[],
            %(document_ids)s::text[], %(embeddings)s::text[])
     as r (judgment_id, kind, content_hash, organization_id, document_id, embedding)
on conflict (api_key_id, judgment_id, kind, model) do update set
    content_hash = excluded.content_hash, organization_id = excluded.organization_id,
    document_id = excluded.document_id, embedding = excluded.embedding

-- name: delete_embeddings
delete from judgment_embeddings e
using unnest(%(judgment_ids)s::text[], %(kinds)s::text[]) as r (judgment_id, kind)
where e.api_key_id = %(api_key_id)s and e.model = %(model)s and e.judgment_id = r.judgment_id and e.kind = r.kind

-- name: thread
select j.*, 1.0::float8 as similarity from judgments j
where j.api_key_id = %(api_key_id)s and j.organization_id = %(organization_id)s
  and j.annotation_id = %(annotation_id)s
  and (%(document_id)s::text is null or j.document_id = %(document_id)s)
order by j.created_at asc, j.id asc
limit %(limit)s

-- name: recent
select j.*, 1.0::float8 as similarity from judgments j
where j.api_key_id = %(api_key_id)s
  and (%(organization_id)s::text is null or j.organization_id = %(organization_id)s)
  and (%(document_id)s::text is null or j.document_id = %(document_id)s)
  and j.created_at >= %(start_ms)s and j.created_at < %(end_ms)s
order by j.created_at desc, j.id desc
limit %(limit)s

-- name: list_judgments
select j.*, null::float8 as similarity from judgments j
where j.api_key_id = %(api_key_id)s
  and (%(organization_id)s::text is null or j.organization_id = %(organization_id)s)
  and (%(document_id)s::text is null or j.document_id = %(document_id)s)
  and (%(decision)s::text is null or j.decision = %(decision)s)
  and (%(judge_type)s::text is null or j.judge_type = %(judge_type)s)
  and (%(reviewer_id)s::text is null or j.reviewer_id = %(reviewer_id)s)
  and (%(annotation_id)s::text is null or j.annotation_id = %(annotation_id)s)
  and (%(after_ts)s::bigint is null or (j.created_at, j.id) < (%(after_ts)s, %(after_id)s))
order by j.created_at desc, j.id desc
limit %(limit)s

-- name: judgments_after
select * from judgments
where (api_key_id, id) > (%(key)s, %(ident)s) and (%(only)s::text is null or api_key_id = %(only)s)
order by api_key_id, id limit %(limit)s

-- name: activities_after
select api_key_id, id from activities
where (api_key_id, id) > (%(key)s, %(ident)s) and (%(only)s::text is null or api_key_id = %(only)s)
order by api_key_id, id limit %(limit)s
