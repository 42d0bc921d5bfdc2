-- name: remember_work
-- A write of the job under test, which must not persist when its transaction dies with the connection.
insert into crash_test_work (job, tenant) values (%(job)s, %(tenant)s)

-- name: terminate_own_backend
-- Make this backend exit, as a crashing extension would (the client sees its connection dropped).
select pg_terminate_backend(pg_backend_pid())
