-- name: delete_workspace
-- Remove a scratch workspace of the search eval; its key, activities, judgments and vectors go with it (cascade).
delete from workspaces where id = %(workspace_id)s and owner_email = %(owner_email)s

-- name: delete_stale_scratch
-- Scratch workspaces that an interrupted eval left behind (older than a day, so a run in progress keeps its own).
delete from workspaces
where starts_with(id, %(prefix)s) and owner_email = %(owner_email)s and created_at < now() - interval '1 day'
