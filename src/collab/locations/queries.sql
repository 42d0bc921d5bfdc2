-- name: migrate_location
-- Move a document's threads at one location (by its id) to a new location object: merged over the old one or in
-- its place; the location id follows the new object's (kept when a merge names none).
update comment_annotations set
    location = case when %(merge)s then coalesce(location, '{}'::jsonb) || %(location)s else %(location)s end,
    location_id = coalesce(%(location_id)s, case when %(merge)s then location_id end),
    updated_at = %(now)s
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and location_id = %(old_id)s
returning id

-- name: delete_location_notifications
-- Delete a document's notifications at one location.
delete from notifications
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and location_id = %(location_id)s
returning id
