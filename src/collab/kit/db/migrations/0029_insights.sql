-- Memory insights per API key (docs/adr/0058-memory-insights.md): reviewer profiles, recurring-reason patterns and
-- alerts, computed by a scheduled job from the key's judgments; the alert settings a key stored.

-- Which keys need a computation: `changes` counts judgment writes (the trigger below), `computed` is the count the
-- last computation saw; the cron queues keys with changes > computed, least recently computed first.
create table insight_state (
    api_key_id   text primary key references api_keys (id) on delete cascade,
    changes      bigint not null default 0,
    computed     bigint not null default 0,
    queued_at    bigint,            -- epoch ms the cron queued a computation still to run (null: none)
    computed_at  bigint             -- epoch ms of the last computation
);
create index insight_state_due_idx on insight_state (computed_at nulls first, api_key_id) where changes > computed;
-- Keys that hold judgments already: computed at the first sweep.
insert into insight_state (api_key_id, changes) select distinct api_key_id, 1 from judgments;

-- Counted at commit (deferred), after every judgment row lock the writing transaction takes: two derive batches of
-- one key never wait on this row while holding judgments the other wants. A key being deleted is skipped.
create function insight_judgments_changed() returns trigger language plpgsql as $$
declare
    key text := case when tg_op = 'DELETE' then old.api_key_id else new.api_key_id end;
begin
    insert into insight_state (api_key_id, changes)
    select key, 1 where exists (select 1 from api_keys where id = key)
    on conflict (api_key_id) do update set changes = insight_state.changes + 1;
    return null;
end
$$;
create constraint trigger insight_judgments_changed after insert or update or delete on judgments
    deferrable initially deferred for each row execute function insight_judgments_changed();

-- One reviewer's profile as `profiles/get` answers it (at most COLLAB_INSIGHTS_MAX_PROFILES per key).
create table insight_profiles (
    api_key_id  text not null references api_keys (id) on delete cascade,
    user_id     text not null,
    judgments   int not null,
    profile     jsonb not null,
    primary key (api_key_id, user_id)
);

-- One recurring reason as `patterns/get` answers it; `members` fingerprints its judgments (a change moves its times).
create table insight_patterns (
    api_key_id        text not null references api_keys (id) on delete cascade,
    key               text not null,
    members           text not null,
    enforcement_rate  double precision,
    confidence        double precision not null,
    updated_at        bigint not null,
    pattern           jsonb not null,
    primary key (api_key_id, key)
);
create index insight_patterns_recent_idx on insight_patterns (api_key_id, updated_at desc, key);

create table insight_alerts (
    api_key_id    text not null references api_keys (id) on delete cascade,
    id            text not null,
    alert_type    text not null,
    severity      text not null check (severity in ('high', 'medium', 'low')),
    dedup_key     text,
    status        text not null default 'active' check (status in ('active', 'dismissed', 'actioned')),
    created_at    bigint not null,
    dismissed_at  bigint,
    dismissed_by  text,
    body          jsonb not null,  -- title, description, evidence, suggestedAction, actionUrl
    primary key (api_key_id, id)
);
create index insight_alerts_active_idx on insight_alerts (api_key_id, created_at desc, id) where status = 'active';
create index insight_alerts_recent_idx on insight_alerts (api_key_id, created_at desc);

-- `alerts/config/update` merges into this; `alerts/config/get` answers {enabled: true} and it.
create table insight_alert_configs (
    api_key_id  text primary key references api_keys (id) on delete cascade,
    config      jsonb not null,
    updated_at  bigint not null
);
