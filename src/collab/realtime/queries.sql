-- name: api_key
-- The API key a user token names, with the version of the key that signs its tokens and its allowed domains.
select id as api_key_id, workspace_id, token_key_version, allowed_domains from api_keys where id = %(api_key_id)s

-- name: upsert_live_state
-- Keep a live state value: replaced, or with `merge` its object keys merged (shallow) into the object kept.
insert into live_states (api_key_id, organization_id, document_id, live_state_data_id, data, updated_at)
values (%(api_key_id)s, %(organization_id)s, %(document_id)s, %(live_state_data_id)s, %(data)s, %(now)s)
on conflict (api_key_id, organization_id, document_id, live_state_data_id) do update set
    data = case
        when %(merge)s and jsonb_typeof(live_states.data) = 'object' and jsonb_typeof(excluded.data) = 'object'
        then live_states.data || excluded.data
        else excluded.data
    end,
    updated_at = excluded.updated_at
returning live_state_data_id, data, updated_at

-- name: lock_document_live_states
-- One broadcast at a time per document for the rest of the transaction, so its caps hold under concurrent writers.
select pg_advisory_xact_lock(hashtext('collab:live_states'), hashtext(%(api_key_id)s || '/' || %(organization_id)s
  || '/' || %(document_id)s))

-- name: measure_live_state
-- Record the JSON size of a value just kept; the document's count of values and their bytes, that one included.
with sized as (
  update live_states set bytes = octet_length(data::text)
  where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
    and live_state_data_id = %(live_state_data_id)s
  returning bytes
)
select count(*) + 1 as count, coalesce(sum(bytes), 0) + (select bytes from sized) as bytes from live_states
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and live_state_data_id <> %(live_state_data_id)s

-- name: live_states
-- A document's live state values (only one when `live_state_data_id` is given), by id.
select live_state_data_id, data, updated_at from live_states
where api_key_id = %(api_key_id)s and organization_id = %(organization_id)s and document_id = %(document_id)s
  and (%(live_state_data_id)s::text is null or live_state_data_id = %(live_state_data_id)s)
order by live_state_data_id
limit %(limit)s
