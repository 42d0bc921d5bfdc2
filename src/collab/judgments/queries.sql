-- name: activities
-- One tenant's activities by id (those that exist), for a derive batch.
select * from activities where api_key_id = %(api_key_id)s and id = any(%(ids)s)

-- name: delete_judgments
-- Delete a tenant's judgments by id (their vectors cascade).
delete from judgments where api_key_id = %(api_key_id)s and id = any(%(ids)s)

-- name: upsert_judgment
-- Insert or replace one derived judgment.
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
-- The content hash of each stored vector of these judgments under a model.
select judgment_id, kind, content_hash from judgment_embeddings
where api_key_id = %(api_key_id)s and model = %(model)s and judgment_id = any(%(ids)s)

-- name: upsert_embeddings
-- Write many vectors in one statement (parallel arrays, one row per judgment and kind).
insert into judgment_embeddings (api_key_id, judgment_id, kind, model, content_hash, organization_id, document_id, embedding)
select %(api_key_id)s, r.judgment_id, r.kind, %(model)s, r.content_hash, r.organization_id, r.document_id, r.embedding::vector
from unnest(%(judgment_ids)s::text[], %(kinds)s::text[], %(content_hashes)s::text[], %(organization_ids)s::text[],
            %(document_ids)s::text[], %(embeddings)s::text[])
     as r (judgment_id, kind, content_hash, organization_id, document_id, embedding)
on conflict (api_key_id, judgment_id, kind, model) do update set
    content_hash = excluded.content_hash, organization_id = excluded.organization_id,
    document_id = excluded.document_id, embedding = excluded.embedding

-- name: delete_embeddings
-- Delete the vectors of (judgment_id, kind) pairs under a model.
delete from judgment_embeddings e
using unnest(%(judgment_ids)s::text[], %(kinds)s::text[]) as r (judgment_id, kind)
where e.api_key_id = %(api_key_id)s and e.model = %(model)s and e.judgment_id = r.judgment_id and e.kind = r.kind

-- name: thread
-- An annotation's thread of judgments, oldest first (the annotationId shortcut).
select j.api_key_id, j.id, j.organization_id, j.document_id, j.annotation_id, j.decision, j.judge_type, j.reasoning, j.content_type, j.reviewer_id, j.confidence, j.action_user, j.agent, j.created_at, 1.0::float8 as similarity from judgments j
where j.api_key_id = %(api_key_id)s and j.organization_id = %(organization_id)s
  and j.annotation_id = %(annotation_id)s
  and (%(document_id)s::text is null or j.document_id = %(document_id)s)
order by j.created_at asc, j.id asc
limit %(limit)s

-- name: recent
-- The judgments of a day range, newest first (the recencyDays shortcut).
select j.api_key_id, j.id, j.organization_id, j.document_id, j.annotation_id, j.decision, j.judge_type, j.reasoning, j.content_type, j.reviewer_id, j.confidence, j.action_user, j.agent, j.created_at, 1.0::float8 as similarity from judgments j
where j.api_key_id = %(api_key_id)s
  and (%(organization_id)s::text is null or j.organization_id = %(organization_id)s)
  and (%(document_id)s::text is null or j.document_id = %(document_id)s)
  and j.created_at >= %(start_ms)s and j.created_at < %(end_ms)s
order by j.created_at desc, j.id desc
limit %(limit)s

-- name: list_judgments
-- Judgments by filters, newest first: a page by key (at most `limit`), then only those that start within `budget`
-- bytes by a cheap estimate (sizes as stored, a compressed JSON value counted 10 times), with the columns a record
-- shows; `fetched` is how many the page had by key. The exact cut is made on the records as rendered.
with page as (
    select j.id, j.created_at,
           octet_length(j.id) + octet_length(j.reasoning) + octet_length(j.decision)
           + (select coalesce(sum(pg_column_size(v) * case when pg_column_compression(v) is null then 1 else 10 end), 0)
              from (values (j.action_user), (j.agent)) v(v)) as bytes
    from judgments j
    where j.api_key_id = %(api_key_id)s
      and (%(organization_id)s::text is null or j.organization_id = %(organization_id)s)
      and (%(document_id)s::text is null or j.document_id = %(document_id)s)
      and (%(decision)s::text is null or j.decision = %(decision)s)
      and (%(judge_type)s::text is null or j.judge_type = %(judge_type)s)
      and (%(content_type)s::text is null or j.content_type = %(content_type)s)
      and (%(reviewer_id)s::text is null or j.reviewer_id = %(reviewer_id)s)
      and (%(annotation_id)s::text is null or j.annotation_id = %(annotation_id)s)
      and (%(after_ts)s::bigint is null or (j.created_at, j.id) < (%(after_ts)s, %(after_id)s))
    order by j.created_at desc, j.id desc
    limit %(limit)s
), sized as (
    select id, created_at, count(*) over () as fetched,
           sum(bytes) over (order by created_at desc, id desc rows unbounded preceding) - bytes as before
    from page
)
select j.id, j.reasoning, j.decision, j.confidence, j.action_user, j.agent, j.created_at, null::float8 as similarity,
       s.fetched
from sized s
-- By key, row by row (offset 0 keeps the planner from trading the index for a scan of the tenant's rows).
cross join lateral (select * from judgments j where j.api_key_id = %(api_key_id)s and j.id = s.id offset 0) j
where s.before < %(budget)s
order by s.created_at desc, s.id desc

-- name: judgments_after
-- One batch of judgments in key order after a key (all tenants, or one); re-embedding walks them.
select * from judgments
where (api_key_id, id) > (%(key)s, %(ident)s) and (%(only)s::text is null or api_key_id = %(only)s)
order by api_key_id, id limit %(limit)s

-- name: judgments_between
-- One batch of judgments in key order after a key, up to another (inclusive): a re-embed range walks them.
select * from judgments
where (api_key_id, id) > (%(key)s, %(ident)s) and (api_key_id, id) <= (%(upto_key)s, %(upto_id)s)
  and (%(only)s::text is null or api_key_id = %(only)s)
order by api_key_id, id limit %(limit)s

-- name: range_bounds
-- The keys that end each range of `step` judgments in key order (all tenants, or one), and the last one: the
-- ranges a re-embed is split into (each from the previous bound, exclusive, to its own, inclusive).
select api_key_id, id from (
    select api_key_id, id, row_number() over (order by api_key_id, id) as n, count(*) over () as total
    from judgments where (%(only)s::text is null or api_key_id = %(only)s)
) as numbered where n %% %(step)s = 0 or n = total order by api_key_id, id

-- name: activities_after
-- One batch of activity keys in order after a key (all tenants, or one); the backfill walks them.
select api_key_id, id from activities
where (api_key_id, id) > (%(key)s, %(ident)s) and (%(only)s::text is null or api_key_id = %(only)s)
order by api_key_id, id limit %(limit)s

-- name: tenant_activities_after
-- One batch of one tenant's activity ids in order after an id, within optional timestamp bounds (memory/backfill).
select id from activities
where api_key_id = %(api_key_id)s and id > %(after)s
  and (%(since)s::bigint is null or "timestamp" >= %(since)s) and (%(until)s::bigint is null or "timestamp" <= %(until)s)
order by id limit %(limit)s

-- name: count_judgments
-- How many judgments there are (all tenants, or one).
select count(*) as n from judgments where (%(only)s::text is null or api_key_id = %(only)s)

-- name: set_session
-- Set many settings in one round trip (names[i] = values[i]): for the connection's session, or with local for the
-- current transaction only.
select set_config(s.name, s.value, %(local)s) from unnest(%(names)s::text[], %(values)s::text[]) as s (name, value)

-- name: count_scope
-- Embeddings in the scope, counted up to %(cap)s (a template: where is the scope, built in repository.py), and the
-- planner's estimate of the table's rows (free: no scan).
select count(*) as n,
       (select greatest(reltuples, 0)::bigint from pg_class where oid = 'judgment_embeddings'::regclass) as total
from (select 1 from judgment_embeddings e where {where} limit %(cap)s) s

-- name: nearest
-- The judgments of the scope whose text is the query's (`same`; a template: same_text, the block below) and the k
-- nearest to the query vector (candidates, one of the two after it), in one statement. The k nearest are found on
-- the embeddings alone, and only those k are joined to their judgments: joined first, an exact scan of a
-- 5,000-row scope paid 5,000 judgment lookups (18 ms against 3 ms). A search reads a judgment's record and the
-- rule-7 filters, never content or the tsvectors.
select j.api_key_id, j.id, j.organization_id, j.document_id, j.annotation_id, j.decision, j.judge_type, j.reasoning,
       j.content_type, j.reviewer_id, j.confidence, j.action_user, j.agent, j.created_at,
       1 - n.distance as similarity, n.same
from (
    select x.*, true as same from ({same_text}) x
    union all
    select c.*, false as same from ({candidates}) c
) n
join judgments j on j.api_key_id = n.api_key_id and j.id = n.judgment_id
order by n.distance

-- name: candidates_same_text
-- The embeddings of the scope's judgments whose text is one of `texts`, whitespace folded and case lowered, newest
-- first, with their distance (a template: column, where, distance). The texts' keys are made by the expression of
-- the key columns (migration 0020), so both sides fold alike; the key index serves the lookup.
select e.api_key_id, e.judgment_id, {distance} as distance from judgments j
join judgment_embeddings e on e.api_key_id = j.api_key_id and e.judgment_id = j.id
where j.{column} = any(array(select md5(lower(btrim(regexp_replace(t, '\s+', ' ', 'g')))) from unnest(%(texts)s::text[]) t))
  and {where}
order by j.created_at desc, j.id
limit %(k)s

-- name: candidates_indexed
-- The k nearest embeddings of the scope by the HNSW index on the order expression, each with its full-precision
-- distance (a template: where, order, distance; the outer query sorts by that distance).
select e.api_key_id, e.judgment_id, {distance} as distance from judgment_embeddings e
where {where} order by {order} limit %(k)s

-- name: candidates_exact
-- The k nearest embeddings of the scope by an exact scan (a template: where, distance). The distance is computed
-- once per row in a fenced subquery (offset 0) and sorted outside it, where the index cannot serve the order:
-- ordering by the expression itself would compute it twice per row (20,000 rows: 15.1 against 13.1-13.3 ms).
select * from (
    select e.api_key_id, e.judgment_id, {distance} as distance from judgment_embeddings e where {where} offset 0
) scanned
order by distance limit %(k)s

-- name: lexical
-- The k judgments of the scope that match every term of the text best (a template: column, where, distance).
-- The matches are taken unordered up to `cap` (the scan stops there), and only those are ranked: a common
-- word over a huge tenant would otherwise rank (and read the tsvector of) every row it matches. The rank is
-- divided by the text's length (flag 2), so a short text that is all the query ranks above a long one that
-- merely contains it (exact-text retrieval).
with hits as materialized (
    select j.api_key_id, j.id, j.created_at, ts_rank_cd(j.{column}, tq, 2) as rank from judgments j
    join judgment_embeddings e on e.api_key_id = j.api_key_id and e.judgment_id = j.id
     and e.kind = %(kind)s and e.model = %(model)s,
    websearch_to_tsquery('simple', %(text)s) tq
    where j.{column} @@ tq and {where} limit %(cap)s
), top as (select * from hits order by rank desc, created_at desc, id limit %(k)s)
select j.api_key_id, j.id, j.organization_id, j.document_id, j.annotation_id, j.decision, j.judge_type, j.reasoning,
       j.content_type, j.reviewer_id, j.confidence, j.action_user, j.agent, j.created_at,
       1 - ({distance}) as similarity
from top
join judgments j on j.api_key_id = top.api_key_id and j.id = top.id
join judgment_embeddings e on e.api_key_id = j.api_key_id and e.judgment_id = j.id
 and e.kind = %(kind)s and e.model = %(model)s
order by top.rank desc, top.created_at desc, top.id

-- name: live_run
-- The re-embed of a model over a scope (one key, or every key) that has not ended, locked for this transaction.
select * from reembed_runs where model = %(model)s and coalesce(api_key_id, '') = coalesce(%(only)s, '')
  and state in ('running', 'stopped', 'finishing')
for update

-- name: insert_run
-- A new re-embed.
insert into reembed_runs (id, model, api_key_id, kinds, batch_size, activate, state, total)
values (%(id)s, %(model)s, %(only)s, %(kinds)s, %(batch_size)s, %(activate)s, 'running', %(total)s)

-- name: insert_ranges
-- A re-embed's ranges: each from the previous bound (exclusive) to its own (inclusive).
insert into reembed_ranges (run_id, seq, after_key, after_id, upto_key, upto_id)
select %(run_id)s, s.seq, s.after_key, s.after_id, s.upto_key, s.upto_id
from unnest(%(seqs)s::int[], %(after_keys)s::text[], %(after_ids)s::text[], %(upto_keys)s::text[],
            %(upto_ids)s::text[]) as s (seq, after_key, after_id, upto_key, upto_id)

-- name: resume_run
-- A stopped (or interrupted) re-embed runs again: its unfinished ranges are free to be taken.
with run as (
    update reembed_runs set state = case when state = 'finishing' then state else 'running' end,
        resumed = resumed + 1, activate = activate or %(activate)s
    where id = %(run_id)s returning *
), freed as (
    update reembed_ranges set worker = null where run_id = %(run_id)s and not done
)
select * from run

-- name: get_run
-- One re-embed with its progress summed over its ranges.
select r.*, coalesce(sum(g.judgments), 0)::int as judgments_done, coalesce(sum(g.embedded), 0)::int as embedded,
       count(g.seq)::int as ranges, (count(g.seq) filter (where g.done))::int as ranges_done,
       (count(distinct split_part(g.worker, '/', 1)) filter (where not g.done and g.worker is not null))::int
           as workers,
       (count(distinct split_part(g.worker, '/', 1)) filter (where g.worker is not null))::int as processes
from reembed_runs r left join reembed_ranges g on g.run_id = r.id
where r.id = %(run_id)s group by r.id

-- name: lock_run
-- A re-embed's row, locked for this transaction (its last range and its finish are decided one at a time).
select * from reembed_runs where id = %(run_id)s for update

-- name: set_run_state
-- A re-embed's state (and, when it ends, when; with its knowledge count or error where given).
update reembed_runs set state = %(state)s, knowledge = coalesce(%(knowledge)s, knowledge),
    error = coalesce(%(error)s, error),
    finished_at = case when %(state)s in ('done', 'failed') then now() else finished_at end
where id = %(run_id)s and state <> all(%(unless)s)

-- name: claim_range
-- The first unfinished range of a running re-embed that no live worker holds (none, or its holder silent past the
-- lease), now held by this one.
update reembed_ranges set worker = %(me)s, updated_at = now()
where (run_id, seq) = (
    select g.run_id, g.seq from reembed_ranges g join reembed_runs r on r.id = g.run_id
    where g.run_id = %(run_id)s and r.state = 'running' and not g.done
      and (g.worker is null or g.updated_at < now() - make_interval(secs => %(lease_s)s))
    order by g.seq limit 1 for update of g skip locked)
returning *

-- name: advance_range
-- A batch of a range is done: its cursor and counts move on, only while this worker still holds it; answers the
-- run's state (no row: the range was taken over).
update reembed_ranges g set cursor_key = %(cursor_key)s, cursor_id = %(cursor_id)s,
    judgments = g.judgments + %(judgments)s, embedded = g.embedded + %(embedded)s, done = %(done)s, updated_at = now()
from reembed_runs r
where g.run_id = %(run_id)s and g.seq = %(seq)s and g.worker = %(me)s and r.id = g.run_id
returning r.state

-- name: ranges_left
-- A re-embed's unfinished ranges, and how many of them nobody holds.
select count(*)::int as undone,
       (count(*) filter (where worker is null or updated_at < now() - make_interval(secs => %(lease_s)s)))::int as free
from reembed_ranges where run_id = %(run_id)s and not done

-- name: live_runs
-- One key's re-embeds that have not ended, newest first.
select * from reembed_runs where api_key_id = %(only)s and state in ('running', 'stopped', 'finishing')
order by state = 'stopped', created_at desc
