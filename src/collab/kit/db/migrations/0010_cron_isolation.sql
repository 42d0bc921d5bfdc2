-- Shared crons isolate each tenant's unit of work: a notification batch, CRDT window or webhook delivery that
-- keeps failing is tried a bounded number of times, then given up with its reason, never retried forever.
alter table notification_batches drop constraint notification_batches_status_check;
alter table notification_batches add constraint notification_batches_status_check
    check (status in ('open', 'closed', 'flushed', 'failed'));
-- Failed flushes so far, and the last one's reason (generic; the detail is in the worker's log).
alter table notification_batches add column attempts int not null default 0, add column error text;
alter table webhook_crdt_pending add column attempts int not null default 0;
-- Sends whose job vanished past its lease (worker lost, or the job raised every try).
alter table webhook_deliveries add column lost_leases int not null default 0;
