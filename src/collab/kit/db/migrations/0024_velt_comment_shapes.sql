-- Velt's comment shapes (issue #37): a thread's status and priority as Velt's objects (the id stays in `status` and
-- `priority`, what filters read; the display fields, name, colors and icon, beside it), and a comment's own context.
-- The stored sizes (0018) count them too: each generated column is made again with the new fields in its sum.
alter table comment_annotations add column status_meta jsonb, add column priority_meta jsonb;
alter table comments add column context jsonb;

alter table comment_annotations drop column bytes;
alter table comment_annotations add column bytes int generated always as (
    400 + comment_string_bytes(id) + comment_string_bytes(document_id) + comment_string_bytes(organization_id)
    + comment_json_bytes(location) + comment_json_bytes(target_element) + comment_string_bytes(priority)
    + comment_json_bytes(assigned_to) + comment_json_bytes(from_user) + comment_json_bytes(context)
    + comment_strings_bytes(visible_user_ids) + comment_string_bytes(resolved_by)
    + comment_json_bytes(status_meta) + comment_json_bytes(priority_meta)
) stored;

alter table comments drop column bytes;
alter table comments add column bytes int generated always as (
    200 + comment_string_bytes(comment_text) + comment_string_bytes(comment_html) + comment_json_bytes(from_user)
    + comment_json_bytes(tagged) + comment_json_bytes(attachments) + comment_json_bytes(agent) + reaction_bytes
    + comment_json_bytes(context)
) stored;
