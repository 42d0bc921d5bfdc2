-- Usage counters for the console's Overview (issue #20): one row per workspace, minute, metric and label,
-- never a row per request. Processes buffer in memory and add their counts with an upsert (kit/usage.py).
create table usage_minutes (
    workspace_id  text not null,
    minute_ms     bigint not null,          -- the minute's start, epoch milliseconds
    metric        text not null,            -- api_calls, judgments_added, searches, ...
    label         text not null default '', -- api_calls: "<route template> <status>"; ask_ai: the provider
    count         bigint not null default 0,
    buckets       bigint[],                 -- a latency histogram (kit/usage.py EDGES_MS), or null
    primary key (workspace_id, minute_ms, metric, label)
);

-- The retention sweep deletes by age across every workspace.
create index usage_minutes_age_idx on usage_minutes (minute_ms);
