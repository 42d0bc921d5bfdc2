-- Each live state value's JSON size, so a document's values are capped in bytes (realtime/livestate.py) without
-- serializing them all at each broadcast.
alter table live_states add column bytes int not null default 0;
update live_states set bytes = octet_length(data::text);
