-- A server whose vector statements killed their backend at start (see kit/db/selftest.py): later starts on the same
-- server and pgvector versions refuse at once instead of crashing the shared server again.
create table vector_self_test_failures (
    server_version text not null,
    vector_version text not null,
    statement      text not null,
    detail         text not null,
    failed_at      timestamptz not null default now(),
    primary key (server_version, vector_version)
);

-- How many times a job's statements lost their connection to a crashed server; the second loss fails it for good
-- (kit/jobs.py `tracked`), so a job that kills the database is not retried into a crash loop.
alter table jobs add column connection_losses int not null default 0;
