-- Comment sizes (issue #34): each comment's and each thread's JSON size as reads render it, kept by Postgres as
-- rows change (any statement, the bulk rewrites of user renames and deletions included), so reads fetch under
-- COLLAB_MAX_RESPONSE_BYTES and writes check a thread's total without reading its comments; and the index that
-- orders an organization's threads by last update (commentannotations/get without one document).

-- JSON sizes as Postgres writes JSON (", " and ": " between items): at or a little above the compact JSON the API
-- sends. Immutable (to_jsonb of text and text[] reads no setting), so generated columns may use them.
create function comment_json_bytes(value jsonb) returns int
language sql immutable parallel safe
return coalesce(octet_length(value::text), 0);

create function comment_string_bytes(value text) returns int
language sql immutable parallel safe
return coalesce(octet_length(to_jsonb(value)::text), 0);

create function comment_strings_bytes(value text[]) returns int
language sql immutable parallel safe
return coalesce(octet_length(to_jsonb(value)::text), 0);

-- One reaction row as a comment's `reactions` shows it, counted as if each row were its own {reaction, userIds}.
create function comment_reaction_bytes(reaction text, user_id text) returns int
language sql immutable parallel safe
return comment_string_bytes(reaction) + comment_string_bytes(user_id) + 30;

-- The reactions' share, kept by the triggers below whatever statement adds, removes or renames reactions (a reaction,
-- a user's rename or data deletion, a thread's delete).
alter table comments add column reaction_bytes int not null default 0;
update comments c set reaction_bytes = r.bytes
from (select api_key_id, organization_id, annotation_id, comment_id,
             sum(comment_reaction_bytes(reaction, user_id)) as bytes
      from comment_reactions group by 1, 2, 3, 4) r
where c.api_key_id = r.api_key_id and c.organization_id = r.organization_id
  and c.annotation_id = r.annotation_id and c.id = r.comment_id;

-- Once per statement, over the rows it changed (transition tables `gone` and `added`, as the trigger names them).
create function comment_reactions_sized() returns trigger
language plpgsql as $$
begin
    if tg_op in ('DELETE', 'UPDATE') then
        update comments c set reaction_bytes = c.reaction_bytes - r.bytes
        from (select api_key_id, organization_id, annotation_id, comment_id,
                     sum(comment_reaction_bytes(reaction, user_id)) as bytes
              from gone group by 1, 2, 3, 4) r
        where c.api_key_id = r.api_key_id and c.organization_id = r.organization_id
          and c.annotation_id = r.annotation_id and c.id = r.comment_id;
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        update comments c set reaction_bytes = c.reaction_bytes + r.bytes
        from (select api_key_id, organization_id, annotation_id, comment_id,
                     sum(comment_reaction_bytes(reaction, user_id)) as bytes
              from added group by 1, 2, 3, 4) r
        where c.api_key_id = r.api_key_id and c.organization_id = r.organization_id
          and c.annotation_id = r.annotation_id and c.id = r.comment_id;
    end if;
    return null;
end
$$;

create trigger comment_reactions_added after insert on comment_reactions
    referencing new table as added for each statement execute function comment_reactions_sized();
create trigger comment_reactions_gone after delete on comment_reactions
    referencing old table as gone for each statement execute function comment_reactions_sized();
create trigger comment_reactions_changed after update on comment_reactions
    referencing old table as gone new table as added for each statement execute function comment_reactions_sized();

-- A comment as rendered (render.comment): 200 for its keys, id and times, then its text, users and blobs.
alter table comments add column bytes int generated always as (
    200 + comment_string_bytes(comment_text) + comment_string_bytes(comment_html) + comment_json_bytes(from_user)
    + comment_json_bytes(tagged) + comment_json_bytes(attachments) + comment_json_bytes(agent) + reaction_bytes
) stored;

-- A thread as rendered without its comments (render.annotation): 400 for its keys, status and times.
alter table comment_annotations add column bytes int generated always as (
    400 + comment_string_bytes(id) + comment_string_bytes(document_id) + comment_string_bytes(organization_id)
    + comment_json_bytes(location) + comment_json_bytes(target_element) + comment_string_bytes(priority)
    + comment_json_bytes(assigned_to) + comment_json_bytes(from_user) + comment_json_bytes(context)
    + comment_strings_bytes(visible_user_ids) + comment_string_bytes(resolved_by)
) stored;

create index comment_annotations_updated_idx
    on comment_annotations (api_key_id, organization_id, updated_at desc, id desc);
