-- name: insert_annotation
-- Create a thread; no row when the id is taken in the organization (an idempotent retry, or another document's).
insert into comment_annotations (api_key_id, organization_id, document_id, id, location, location_id, target_element,
                                 status, status_type, status_meta, priority, priority_meta, assigned_to, assigned_id,
                                 from_user, from_id, context, visibility, visible_user_ids, kind, source_type,
                                 agent, suggestion, created_at, updated_at)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(id)s, %(location)s, %(location_id)s,
        %(target_element)s, %(status)s, %(status_type)s, %(status_meta)s, %(priority)s, %(priority_meta)s,
        %(assigned_to)s, %(assigned_id)s, %(from_user)s, %(from_id)s, %(context)s, %(visibility)s,
        %(visible_user_ids)s, %(kind)s, %(source_type)s, %(agent)s, %(suggestion)s, %(created_at)s, %(updated_at)s)
on conflict do nothing
returning *

-- name: get_annotation
-- One thread of a document.
select * from comment_annotations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and id = %(id)s

-- name: lock_annotation
-- One thread of a document, locked for a change (comment ids, the per-thread cap, mentions notified once).
select * from comment_annotations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and id = %(id)s
for update

-- name: annotation_document
-- The document an annotation id lives in within the organization, when it exists.
select document_id from comment_annotations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s

-- name: lock_annotations
-- Threads of a document, locked, in id order: all of them, or those with the ids, at the locations, started by the
-- users, and (for agents' threads) whose first comment is by the agent or for one of the pages, and only agents'
-- still-pending suggestions; each filter when set.
select * from comment_annotations a
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and (%(location_ids)s::text[] is null or location_id = any(%(location_ids)s))
  and (%(user_ids)s::text[] is null or from_id = any(%(user_ids)s))
  and (%(agent_id)s::text is null and %(agent_urls)s::text[] is null or exists (
        select 1 from comments c
        where c.api_key_id = a.api_key_id and c.organization_id = a.organization_id and c.annotation_id = a.id
          and c.id = (select min(f.id) from comments f
                      where f.api_key_id = a.api_key_id and f.organization_id = a.organization_id
                        and f.annotation_id = a.id)
          and (%(agent_id)s::text is null or c.agent ->> 'agentId' = %(agent_id)s)
          and (%(agent_urls)s::text[] is null or c.agent ->> 'url' = any(%(agent_urls)s))))
  and (not %(agent_suggestions)s
       or (kind = 'suggestion' and source_type = 'agent' and suggestion ->> 'status' = 'pending'))
order by id
for update

-- name: document_organizations
-- The organizations (at most two) holding a document of this id: a call that names no organization needs just one.
select organization_id from documents
where api_key_id = %(api_key_id)s and id = %(document_id)s
order by organization_id
limit 2

-- name: update_annotation
-- Change a thread's fields (each only when set) and stamp it updated.
update comment_annotations set
    status = coalesce(%(status)s, status),
    status_type = coalesce(%(status_type)s, status_type),
    status_meta = case when %(status)s::text is null then status_meta else %(status_meta)s end,
    -- A status that is not terminal clears the resolver; else the one named (null clears), else who made it terminal.
    resolved_by = case when %(status_type)s::text is not null and %(status_type)s <> 'terminal' then null
                       when %(set_resolved_by)s then %(resolved_by)s
                       when %(status_type)s::text is not null then %(resolver)s
                       else resolved_by end,
    priority = case when %(set_priority)s then %(priority)s else priority end,
    priority_meta = case when %(set_priority)s then %(priority_meta)s else priority_meta end,
    target_element = case when %(set_target)s then %(target_element)s else target_element end,
    assigned_to = case when %(set_assigned)s then %(assigned_to)s else assigned_to end,
    assigned_id = case when %(set_assigned)s then %(assigned_id)s else assigned_id end,
    location = case when %(set_location)s then %(location)s else location end,
    location_id = case when %(set_location)s then %(location_id)s else location_id end,
    context = case when %(set_context)s then %(context)s else context end,
    visibility = coalesce(%(visibility)s, visibility),
    visible_user_ids = case when %(visibility)s::text is null then visible_user_ids else %(visible_user_ids)s end,
    kind = coalesce(%(kind)s, kind),
    suggestion = case when %(set_suggestion)s then %(suggestion)s else suggestion end,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning *

-- name: touch_annotation
-- Stamp a thread updated and take its next comment ids, after any id an import brought (`floor`).
update comment_annotations set updated_at = %(now)s,
    last_comment_id = greatest(last_comment_id, %(floor)s) + %(taken)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = %(id)s
returning last_comment_id

-- name: delete_annotations
-- Delete threads (their comments, reactions, mentions and read marks go by cascade).
delete from comment_annotations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and id = any(%(ids)s)
returning id

-- name: plan_annotations
-- A page of threads by last update then id after a key, filtered (at most `limit` threads: the organization's or one
-- document's index gives them in order), numbered, each with its stored size and, in order, its comments' ids and
-- stored sizes (reactions included); no row's size is under 200 bytes, so at most `rows` rows (the most the budget
-- can take) are read. `fetched` is how many threads the page had by key. Template: {order} asc or desc, {after} > or <.
with page as (
    select a.id, a.updated_at, a.bytes from comment_annotations a
    where a.api_key_id = %(api_key_id)s and a.organization_id = %(organization_id)s
      and (%(document_id)s::text is null or a.document_id = %(document_id)s)
      and (%(document_ids)s::text[] is null or a.document_id = any(%(document_ids)s))
      and (%(folder_id)s::text is null or a.document_id in (
            select d.id from documents d
            where d.api_key_id = %(api_key_id)s and d.organization_id = %(organization_id)s
              and d.folder_id = %(folder_id)s))
      and (%(annotation_ids)s::text[] is null or a.id = any(%(annotation_ids)s))
      and (%(location_ids)s::text[] is null or a.location_id = any(%(location_ids)s))
      and (%(user_ids)s::text[] is null or a.from_id = any(%(user_ids)s))
      and (%(assigned_ids)s::text[] is null or a.assigned_id = any(%(assigned_ids)s))
      and (%(status_ids)s::text[] is null or a.status = any(%(status_ids)s))
      and (%(resolved_by)s::text is null or a.resolved_by = %(resolved_by)s)
      and (%(mentioned_ids)s::text[] is null or exists (
            select 1 from comment_mentions m
            where m.api_key_id = a.api_key_id and m.organization_id = a.organization_id and m.annotation_id = a.id
              and m.user_id = any(%(mentioned_ids)s)))
      and (%(created_after)s::bigint is null or a.created_at >= %(created_after)s)
      and (%(created_before)s::bigint is null or a.created_at <= %(created_before)s)
      and (%(updated_after)s::bigint is null or a.updated_at >= %(updated_after)s)
      and (%(updated_before)s::bigint is null or a.updated_at <= %(updated_before)s)
      and (%(viewer)s::text is null or a.visibility <> 'restricted' or a.from_id = %(viewer)s
           or %(viewer)s = any(a.visible_user_ids))
      and (%(agent_id)s::text is null or a.agent ->> 'agentId' = %(agent_id)s)
      and (%(execution_id)s::text is null or a.agent ->> 'executionId' = %(execution_id)s)
      and (%(agent_type)s::text is null or a.agent ->> 'agentType' = %(agent_type)s)
      and (%(agent_source)s::text is null or a.agent ->> 'agentSource' = %(agent_source)s)
      and (not %(agent_suggestions)s
           or (a.kind = 'suggestion' and a.source_type = 'agent' and a.suggestion ->> 'status' = 'pending'))
      and (not %(agent_comments)s or a.source_type = 'agent')
      and (%(after_ts)s::bigint is null or (a.updated_at, a.id) {after} (%(after_ts)s, %(after_id)s))
    order by a.updated_at {order}, a.id {order}
    limit %(limit)s
), numbered as (
    select id, updated_at, bytes, row_number() over (order by updated_at {order}, id {order}) as n,
           count(*) over () as fetched
    from page
)
select p.n, p.id, p.updated_at, p.bytes, p.fetched, c.id as comment_id, c.bytes as comment_bytes
from numbered p
left join lateral (
    select c.id, c.bytes from comments c
    where c.api_key_id = %(api_key_id)s and c.organization_id = %(organization_id)s and c.annotation_id = p.id
    order by c.id
    limit %(rows)s) c on true
-- In the page's own order (not by n): the join keeps it, so rows stream to the limit, sorted thread by thread.
order by p.updated_at {order}, p.id {order}, c.id nulls first
limit %(rows)s

-- name: annotations_by_id
-- Threads of an organization by id (a planned page's, at most what the budget takes).
select * from comment_annotations
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and id = any(%(ids)s)

-- name: thread_comments
-- Comments of some threads in id order, each with its reactions ({reaction, userIds} in first-use order): all of a
-- thread's, or those up to its `upto` id when that is set (a page cut inside the thread).
select c.*,
       comment_reaction_list(c.api_key_id, c.organization_id, c.annotation_id, c.id) as reactions
from unnest(%(annotation_ids)s::text[], %(upto)s::bigint[]) as w(annotation_id, upto)
cross join lateral (
    select * from comments c
    where c.api_key_id = %(api_key_id)s and c.organization_id = %(organization_id)s
      and c.annotation_id = w.annotation_id and (w.upto is null or c.id <= w.upto)
    order by c.id) c
order by c.annotation_id, c.id

-- name: comments_page
-- A page of one thread's comments (only some ids', some authors' when named) after an id, at most `limit`, then only those that end
-- within `budget` bytes by their stored sizes (at least the first), each with its reactions; `fetched` is how many
-- the page had by id. The exact cut is made on the comments as rendered (kit/paging.py).
with page as (
    select id, bytes from comments
    where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
      and (%(comment_ids)s::bigint[] is null or id = any(%(comment_ids)s))
      and (%(user_ids)s::text[] is null or from_id = any(%(user_ids)s))
      and (%(after_id)s::bigint is null or id > %(after_id)s)
    order by id
    limit %(limit)s
), sized as (
    select id, count(*) over () as fetched, sum(bytes) over (order by id) as upto, row_number() over (order by id) as n
    from page
)
select c.*, comment_reaction_list(c.api_key_id, c.organization_id, c.annotation_id, c.id) as reactions, s.fetched
from sized s
cross join lateral (
    select * from comments c
    where c.api_key_id = %(api_key_id)s and c.organization_id = %(organization_id)s
      and c.annotation_id = %(annotation_id)s and c.id = s.id offset 0) c
where s.upto <= %(budget)s or s.n = 1
order by s.id

-- name: comment_briefs
-- Named comments of a thread (all of them when ids is null) without their free-form blobs: author, times, the first
-- `preview` characters of the text and html, the tagged user ids and the stored size (what edits, deletes, reactions
-- and their events need).
select id, from_id, jsonb_strip_nulls(jsonb_build_object('userId', from_user -> 'userId', 'name', from_user -> 'name',
                                                         'email', from_user -> 'email')) as from_brief,
       left(comment_text, %(preview)s) as text_preview, left(comment_html, %(preview)s) as html_preview,
       created_at, updated_at, is_edited, bytes,
       jsonb_path_query_array(tagged, '$[*].userId') as tagged_ids
from comments
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
  and (%(ids)s::bigint[] is null or id = any(%(ids)s))
order by id

-- name: thread_load
-- How many comments a thread holds and their stored bytes (reactions included), read from the comments' sizes.
select count(*) as n, coalesce(sum(bytes), 0) as bytes from comments
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s

-- name: thread_participants
-- Who a thread's notifications reach beyond the document's audience: its comments' authors and tagged users
-- (from the mentions table: no comment's blobs are read).
select from_id as user_id from comments
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
union
select user_id from comment_mentions
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s

-- name: insert_comments
-- Add comments to a thread in one statement (one row per element of `rows`, a JSON array); an imported id the thread
-- already holds is skipped (a retried import); the ids added.
insert into comments (api_key_id, organization_id, document_id, annotation_id, id, comment_text, comment_html,
                      from_user, from_id, tagged, attachments, agent, context, created_at, updated_at)
select %(api_key_id)s, %(organization_id)s, %(document_id)s, %(annotation_id)s, r.id, r.comment_text, r.comment_html,
       r.from_user, r.from_user ->> 'userId', r.tagged, r.attachments, r.agent, r.context, r.created_at, r.updated_at
from jsonb_to_recordset(%(rows)s) as r(id bigint, comment_text text, comment_html text, from_user jsonb,
                                       tagged jsonb, attachments jsonb, agent jsonb, context jsonb,
                                       created_at bigint, updated_at bigint)
on conflict do nothing
returning id

-- name: update_comment
-- Edit a comment's text, html and tags (each only when set); it keeps createdAt and becomes edited.
update comments set
    comment_text = case when %(set_text)s then %(comment_text)s else comment_text end,
    comment_html = case when %(set_html)s then %(comment_html)s else comment_html end,
    tagged = case when %(set_tagged)s then %(tagged)s else tagged end,
    is_edited = true,
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
  and id = %(id)s
returning id, bytes

-- name: delete_comments
-- Delete comments of a thread (their reactions and mentions go by cascade).
delete from comments
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
  and id = any(%(ids)s)
returning id

-- name: insert_mentions
-- Record who a comment tags; returns only the users newly tagged (each is notified once).
insert into comment_mentions (api_key_id, organization_id, document_id, annotation_id, comment_id, user_id)
select %(api_key_id)s, %(organization_id)s, %(document_id)s, %(annotation_id)s, %(comment_id)s, u
from unnest(%(user_ids)s::text[]) as u
on conflict do nothing
returning user_id

-- name: insert_new_mentions
-- Record who new comments tag, in one statement (`pairs`: a JSON array of {commentId, userId}); the pairs stored.
insert into comment_mentions (api_key_id, organization_id, document_id, annotation_id, comment_id, user_id)
select %(api_key_id)s, %(organization_id)s, %(document_id)s, %(annotation_id)s, p."commentId", p."userId"
from jsonb_to_recordset(%(pairs)s) as p("commentId" bigint, "userId" text)
on conflict do nothing
returning comment_id, user_id

-- name: drop_mentions
-- Forget tags a comment no longer carries.
delete from comment_mentions
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
  and comment_id = %(comment_id)s and not (user_id = any(%(user_ids)s))

-- name: reaction_counts
-- A comment's reactions before adding one: all of them, their distinct kinds, the user's, whether this kind is among
-- them and whether the user made this very one already (the primary key's prefix serves it).
select count(*) as total, count(distinct reaction) as kinds, count(*) filter (where user_id = %(user_id)s) as mine,
       coalesce(bool_or(reaction = %(reaction)s), false) as known_kind,
       coalesce(bool_or(reaction = %(reaction)s and user_id = %(user_id)s), false) as made
from comment_reactions
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
  and comment_id = %(comment_id)s

-- name: insert_reaction
-- A user's reaction on a comment (its size follows: migration 0018's trigger); no row when they had made it already.
insert into comment_reactions (api_key_id, organization_id, document_id, annotation_id, comment_id, reaction, user_id,
                               created_at)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(annotation_id)s, %(comment_id)s, %(reaction)s,
        %(user_id)s, %(now)s)
on conflict do nothing
returning user_id

-- name: delete_reaction
-- Take back a user's reaction; no row when there was none.
delete from comment_reactions
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and annotation_id = %(annotation_id)s
  and comment_id = %(comment_id)s and reaction = %(reaction)s and user_id = %(user_id)s
returning user_id

-- name: mark_read
-- Move a user's read marks on some threads of a document (all when ids is null) to now, only on threads the user
-- may see (access.may_see); the threads marked.
insert into comment_reads (api_key_id, organization_id, document_id, annotation_id, user_id, read_at)
select a.api_key_id, a.organization_id, a.document_id, a.id, %(user_id)s, %(now)s
from comment_annotations a
where a.api_key_id = %(api_key_id)s and a.organization_id = %(organization_id)s and a.document_id = %(document_id)s
  and (%(ids)s::text[] is null or a.id = any(%(ids)s))
  and (a.visibility <> 'restricted' or a.from_id = %(user_id)s or %(user_id)s = any(a.visible_user_ids))
on conflict (api_key_id, organization_id, annotation_id, user_id)
do update set read_at = greatest(comment_reads.read_at, excluded.read_at), document_id = excluded.document_id
returning annotation_id

-- name: count_scope
-- How many threads a count/get would read (its documents', else the organization's), counting no further than
-- `most` + 1 (an index-only walk).
select count(*) as n from (
    select 1 from comment_annotations a
    where a.api_key_id = %(api_key_id)s and a.organization_id = %(organization_id)s
      and (%(document_ids)s::text[] is null or a.document_id = any(%(document_ids)s))
      and (%(status_ids)s::text[] is null or a.status = any(%(status_ids)s))
    limit %(most)s + 1) s

-- name: count_threads
-- Per document, the threads a user may see, those with a comment by someone else after the user's read mark,
-- and those comments.
select a.document_id,
       count(*) as total,
       count(*) filter (where u.n > 0) as unread,
       coalesce(sum(u.n), 0) as unread_comments
from comment_annotations a
left join comment_reads r on r.api_key_id = a.api_key_id and r.organization_id = a.organization_id
     and r.annotation_id = a.id and r.user_id = %(user_id)s
cross join lateral (
    select count(*) as n from comments c
    where c.api_key_id = a.api_key_id and c.organization_id = a.organization_id and c.annotation_id = a.id
      and c.from_id <> %(user_id)s and c.created_at > coalesce(r.read_at, -1)) u
where a.api_key_id = %(api_key_id)s and a.organization_id = %(organization_id)s
  and (%(document_ids)s::text[] is null or a.document_id = any(%(document_ids)s))
  and (%(status_ids)s::text[] is null or a.status = any(%(status_ids)s))
  and (a.visibility <> 'restricted' or a.from_id = %(user_id)s or %(user_id)s = any(a.visible_user_ids))
group by a.document_id

-- name: rename_annotation_users
-- Rewrite one user's identity on a document's threads (creator, assignee, resolver, visibility list); only on some
-- threads when ids is set.
update comment_annotations set
    from_user = case when from_id = %(old_id)s then %(new_user)s else from_user end,
    from_id = case when from_id = %(old_id)s then %(new_id)s else from_id end,
    assigned_to = case when assigned_id = %(old_id)s then %(new_user)s else assigned_to end,
    assigned_id = case when assigned_id = %(old_id)s then %(new_id)s else assigned_id end,
    resolved_by = case when resolved_by = %(old_id)s then %(new_id)s else resolved_by end,
    visible_user_ids = array_replace(visible_user_ids, %(old_id)s, %(new_id)s),
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(ids)s::text[] is null or id = any(%(ids)s))
  and (from_id = %(old_id)s or assigned_id = %(old_id)s or resolved_by = %(old_id)s
       or %(old_id)s = any(visible_user_ids))
returning id

-- name: rename_comment_users
-- Rewrite one user's identity as a comment author and in comments' tags on a document's threads (some, when ids is
-- set).
update comments set
    from_user = case when from_id = %(old_id)s then %(new_user)s else from_user end,
    from_id = case when from_id = %(old_id)s then %(new_id)s else from_id end,
    tagged = (select coalesce(jsonb_agg(case when t ->> 'userId' = %(old_id)s
                                             then jsonb_build_object('userId', %(new_id)s::text, 'contact', %(new_user)s)
                                             else t end), '[]'::jsonb)
              from jsonb_array_elements(tagged) t)
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(ids)s::text[] is null or annotation_id = any(%(ids)s))
  and (from_id = %(old_id)s or tagged @> jsonb_build_array(jsonb_build_object('userId', %(old_id)s::text)))

-- name: rename_other_users
-- Rewrite one user's identity in reactions, mentions and read marks on a document's threads (some, when ids is set);
-- a clash keeps one.
with reactions as (
    update comment_reactions x set user_id = %(new_id)s
    where x.api_key_id = %(api_key_id)s and x.organization_id = %(organization_id)s and x.user_id = %(old_id)s
      and x.document_id = %(document_id)s and (%(ids)s::text[] is null or x.annotation_id = any(%(ids)s))
      and not exists (select 1 from comment_reactions y
                      where y.api_key_id = x.api_key_id and y.organization_id = x.organization_id
                        and y.annotation_id = x.annotation_id and y.comment_id = x.comment_id
                        and y.reaction = x.reaction and y.user_id = %(new_id)s)
), mentions as (
    update comment_mentions x set user_id = %(new_id)s
    where x.api_key_id = %(api_key_id)s and x.organization_id = %(organization_id)s and x.user_id = %(old_id)s
      and x.document_id = %(document_id)s and (%(ids)s::text[] is null or x.annotation_id = any(%(ids)s))
      and not exists (select 1 from comment_mentions y
                      where y.api_key_id = x.api_key_id and y.organization_id = x.organization_id
                        and y.annotation_id = x.annotation_id and y.comment_id = x.comment_id
                        and y.user_id = %(new_id)s)
)
update comment_reads x set user_id = %(new_id)s
where x.api_key_id = %(api_key_id)s and x.organization_id = %(organization_id)s and x.user_id = %(old_id)s
  and x.document_id = %(document_id)s and (%(ids)s::text[] is null or x.annotation_id = any(%(ids)s))
  and not exists (select 1 from comment_reads y
                  where y.api_key_id = x.api_key_id and y.organization_id = x.organization_id
                    and y.annotation_id = x.annotation_id and y.user_id = %(new_id)s)

-- name: forget_user_threads
-- User-data deletion: threads the users started go whole (with the replies in them).
delete from comment_annotations a
where a.api_key_id = %(api_key_id)s and a.from_id = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or a.organization_id = any(%(organization_ids)s))

-- name: forget_user_parts
-- User-data deletion: the users' comments, reactions, mentions and read marks in threads that stay; their name
-- as assignee, resolver or on a visibility list.
with comments_gone as (
    delete from comments c
    where c.api_key_id = %(api_key_id)s and c.from_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or c.organization_id = any(%(organization_ids)s))
), reactions_gone as (
    delete from comment_reactions x
    where x.api_key_id = %(api_key_id)s and x.user_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or x.organization_id = any(%(organization_ids)s))
), mentions_gone as (
    delete from comment_mentions m
    where m.api_key_id = %(api_key_id)s and m.user_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or m.organization_id = any(%(organization_ids)s))
), reads_gone as (
    delete from comment_reads r
    where r.api_key_id = %(api_key_id)s and r.user_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or r.organization_id = any(%(organization_ids)s))
), tags_gone as (
    update comments c set tagged = (select coalesce(jsonb_agg(t), '[]'::jsonb) from jsonb_array_elements(c.tagged) t
                                    where not (t ->> 'userId' = any(%(user_ids)s)))
    where c.api_key_id = %(api_key_id)s and not (c.from_id = any(%(user_ids)s))
      and (%(organization_ids)s::text[] is null or c.organization_id = any(%(organization_ids)s))
      and exists (select 1 from jsonb_array_elements(c.tagged) t where t ->> 'userId' = any(%(user_ids)s))
)
update comment_annotations a set
    assigned_to = case when a.assigned_id = any(%(user_ids)s) then null else a.assigned_to end,
    assigned_id = case when a.assigned_id = any(%(user_ids)s) then null else a.assigned_id end,
    resolved_by = case when a.resolved_by = any(%(user_ids)s) then null else a.resolved_by end,
    visible_user_ids = (select array_agg(u) from unnest(a.visible_user_ids) u where not (u = any(%(user_ids)s)))
where a.api_key_id = %(api_key_id)s
  and (%(organization_ids)s::text[] is null or a.organization_id = any(%(organization_ids)s))
  and (a.assigned_id = any(%(user_ids)s) or a.resolved_by = any(%(user_ids)s)
       or a.visible_user_ids && %(user_ids)s::text[])

-- name: user_comments
-- Export: a page of the users' comments in (organization, annotation, comment) order after a key, at most `limit`,
-- then only those that end within `budget` bytes by their stored sizes (at least the first), each with its
-- reactions; `fetched` is how many the page had by key.
with page as (
    -- The record around the comment: its ids and owner, 100 bytes of keys.
    select c.organization_id, c.annotation_id, c.id,
           c.bytes + comment_string_bytes(c.organization_id) + comment_string_bytes(c.document_id)
           + comment_string_bytes(c.annotation_id) + comment_string_bytes(c.from_id) + 100 as bytes
    from comments c
    where c.api_key_id = %(api_key_id)s and c.from_id = any(%(user_ids)s)
      and (%(organization_ids)s::text[] is null or c.organization_id = any(%(organization_ids)s))
      and (%(after_org)s::text is null
           or (c.organization_id, c.annotation_id, c.id) > (%(after_org)s, %(after_annotation)s, %(after_id)s::bigint))
    order by c.organization_id, c.annotation_id, c.id
    limit %(limit)s
), sized as (
    select organization_id, annotation_id, id, count(*) over () as fetched,
           row_number() over (order by organization_id, annotation_id, id) as n,
           sum(bytes) over (order by organization_id, annotation_id, id) as upto
    from page
)
select c.*, comment_reaction_list(c.api_key_id, c.organization_id, c.annotation_id, c.id) as reactions, s.fetched
from sized s
cross join lateral (
    select * from comments c
    where c.api_key_id = %(api_key_id)s and c.organization_id = s.organization_id
      and c.annotation_id = s.annotation_id and c.id = s.id offset 0) c
where s.upto <= %(budget)s or s.n = 1
order by s.n

-- name: user_reactions
-- Export: a page of the users' reactions in key order after a key.
select * from comment_reactions x
where x.api_key_id = %(api_key_id)s and x.user_id = any(%(user_ids)s)
  and (%(organization_ids)s::text[] is null or x.organization_id = any(%(organization_ids)s))
  and (%(after_org)s::text is null
       or (x.organization_id, x.annotation_id, x.comment_id, x.reaction, x.user_id)
          > (%(after_org)s, %(after_annotation)s, %(after_comment)s::bigint, %(after_reaction)s, %(after_user)s))
order by x.organization_id, x.annotation_id, x.comment_id, x.reaction, x.user_id
limit %(limit)s
