"""The query helpers (kit/db/pool.py) on psycopg's cursor with every statement prepared: the same answers and errors
as an unprepared query, statements prepared once per connection and capped, stale ones prepared again.

Every pooled connection has a statement and an idle-in-transaction time limit; index builds lift the first."""

import asyncio

import psycopg
import pytest

from collab.embeddings import registry
from collab.kit.db import pool as dbpool
from collab.kit.db.pool import create_pool, execute, fetch_all, fetch_one

TABLE = """create table direct_t (id text primary key, n bigint, flag boolean, doc jsonb, tags text[], note text,
                                  at timestamptz default '2026-01-02T03:04:05Z')"""


def _run(servers, body):
    """Run `body(pool)` on a fresh pool, with a scratch table that is dropped afterwards."""

    async def main():
        pool = create_pool(servers["database_url"], max_size=2)
        await pool.open(wait=True)
        try:
            async with pool.connection() as conn:
                await conn.execute("drop table if exists direct_t")
                await conn.execute(TABLE)
            return await body(pool)
        finally:
            async with pool.connection() as conn:
                await conn.execute("drop table if exists direct_t")
            await pool.close()

    return asyncio.run(main())


async def _cursor_rows(conn, sql, params):
    """psycopg's own cursor path, for comparison."""
    cur = await conn.execute(sql, params, prepare=False)
    return await cur.fetchall()


async def _prepared(conn) -> list[str]:
    cur = await conn.execute(
        "select name from pg_prepared_statements where statement like '%%from direct_t%%' order by name", prepare=False)
    return [r["name"] for r in await cur.fetchall()]


def test_helpers_answer_as_an_unprepared_query(servers):

    async def body(pool):
        async with pool.connection() as conn:
            insert = ("insert into direct_t (id, n, flag, doc, tags, note)"
                      " values (%(id)s, %(n)s, %(flag)s, %(doc)s, %(tags)s, %(note)s)")
            for i, row in enumerate([("a", 2**40, True, '{"k": [1, "x"]}', ["p", "q"], None),
                                     ("b", -3, False, '{"k": null}', [], "ünïcode"), ("c", 0, None, None, None, "")]):
                params = dict(zip(("id", "n", "flag", "doc", "tags", "note"), row))
                assert await execute(conn, insert, params) == 1
            queries = [("select * from direct_t order by id", {}),
                       ("select * from direct_t where id = any(%(ids)s) order by id", {"ids": ["a", "c", "zz"]}),
                       ("select id, n from direct_t where n > %(n)s and (%(note)s::text is null or note = %(note)s)",
                        {"n": -10, "note": None}),
                       ("select count(*) as c, sum(n) as s from direct_t where id > %(after)s", {"after": "a"}),
                       ("select * from direct_t where id = %(id)s", {"id": "missing"})]
            for sql, params in queries:
                expected = await _cursor_rows(conn, sql, params)
                assert await fetch_all(conn, sql, params) == expected
                assert await fetch_one(conn, sql, params) == (expected[0] if expected else None)
            assert len(await _prepared(conn)) >= len(queries)  # each prepared at its first use

            update = "update direct_t set note = %(note)s where n <= %(n)s"
            assert await execute(conn, update, {"note": "x", "n": 0}) == 2
            assert await execute(conn, "select id from direct_t where note = %(note)s", {"note": "x"}) == 2
            with pytest.raises(psycopg.ProgrammingError):
                await fetch_all(conn, "update direct_t set note = %(note)s where id = 'a'", {"note": "y"})
            rows = await fetch_all(conn, "select note from direct_t where id = %(id)s", {"id": "a"})
            assert rows == [{"note": "y"}]  # the statement itself ran, like psycopg's

    _run(servers, body)


def test_statements_are_prepared_once_per_connection(servers):

    async def body(pool):
        async with pool.connection() as conn:
            for n in range(5):
                await fetch_all(conn, "select * from direct_t where n = %(n)s", {"n": n})
            await fetch_all(conn, "select * from direct_t where id = %(id)s", {"id": "x"})
            # A value of another type is another statement, as Postgres types the parameters when preparing.
            await fetch_all(conn, "select * from direct_t where n = %(n)s", {"n": 2**40})
            assert len(await _prepared(conn)) == 3

    _run(servers, body)


def test_errors_and_transactions(servers):

    async def body(pool):
        async with pool.connection() as conn:
            insert = "insert into direct_t (id) values (%(id)s)"
            await execute(conn, insert, {"id": "a"})
            with pytest.raises(psycopg.errors.UniqueViolation) as caught:
                await execute(conn, insert, {"id": "a"})
            assert caught.value.diag.constraint_name == "direct_t_pkey"
            with pytest.raises(psycopg.errors.SyntaxError):
                await fetch_all(conn, "selec * from direct_t where id = %(id)s", {"id": "a"})
            with pytest.raises(psycopg.errors.UndefinedTable):
                await fetch_one(conn, "select * from nowhere where id = %(id)s", {"id": "a"})
            # The connection still answers after each failure.
            assert await fetch_one(conn, "select id from direct_t where id = %(id)s", {"id": "a"}) == {"id": "a"}

            with pytest.raises(psycopg.errors.UniqueViolation):
                async with conn.transaction():
                    await execute(conn, insert, {"id": "b"})
                    await execute(conn, insert, {"id": "a"})
            assert await fetch_all(conn, "select id from direct_t where id > %(id)s", {"id": ""}) == [{"id": "a"}]
            async with conn.transaction():
                await execute(conn, insert, {"id": "c"})
            assert await fetch_one(conn, "select id from direct_t where id = %(id)s", {"id": "c"}) == {"id": "c"}
        async with pool.connection() as conn:
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    _run(servers, body)


def test_prepared_statements_are_capped_per_connection(servers, monkeypatch):
    monkeypatch.setattr(dbpool, "PREPARED_MAX", 2)

    async def body(pool):
        async with pool.connection() as conn:
            await execute(conn, "insert into direct_t (id, n) values (%(id)s, %(n)s)", {"id": "a", "n": 1})
            for column in ("id", "n", "flag", "note"):
                rows = await fetch_all(conn, f"select {column} from direct_t where id = %(id)s", {"id": "a"})
                assert len(rows) == 1 and list(rows[0]) == [column]
            assert len(await _prepared(conn)) == 2  # the least recently used ones were dropped

    _run(servers, body)


def test_a_prepared_statement_survives_a_table_change(servers):

    async def body(pool):
        async with pool.connection() as conn:
            read = "select * from direct_t where id = %(id)s"
            await execute(conn, "insert into direct_t (id) values (%(id)s)", {"id": "a"})
            assert "extra" not in await fetch_one(conn, read, {"id": "a"})
            async with pool.connection() as other:  # a migration by another process: this one cannot see it
                await other.execute("alter table direct_t add column extra int default 7")
            # Outside a transaction the stale statement is prepared again and the read answers.
            assert (await fetch_one(conn, read, {"id": "a"}))["extra"] == 7
            async with pool.connection() as other:
                await other.execute("alter table direct_t add column more int default 8")
            # Inside one the failure stands (the transaction is spoiled); the next read prepares afresh.
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                async with conn.transaction():
                    await fetch_one(conn, read, {"id": "a"})
            assert (await fetch_one(conn, read, {"id": "a"}))["more"] == 8

    _run(servers, body)


def test_statements_outlive_psycopgs_rollback_cleanup(servers):

    async def body(pool):
        async with pool.connection() as conn:
            read = "select id from direct_t where id = %(id)s"
            await execute(conn, "insert into direct_t (id) values (%(id)s)", {"id": "a"})
            assert await fetch_one(conn, read, {"id": "a"}) == {"id": "a"}
            # psycopg prepares one of its own, so its rollback ends with DEALLOCATE ALL, dropping ours too.
            await conn.execute("select 1 where %(x)s", {"x": True}, prepare=True)
            with pytest.raises(psycopg.errors.DivisionByZero):
                async with conn.transaction():
                    await fetch_one(conn, "select 1 / %(zero)s as x", {"zero": 0})
            assert await _prepared(conn) == []
            async with conn.transaction():  # inside a transaction, where a failure could not be run again
                assert await fetch_one(conn, read, {"id": "a"}) == {"id": "a"}

            # Dropped where psycopg cannot see it: outside a transaction the read prepares afresh and answers.
            await conn.execute("deallocate all")
            assert await fetch_one(conn, read, {"id": "a"}) == {"id": "a"}

    _run(servers, body)


def test_a_pooled_connection_comes_back_idle_and_what_a_block_left_open_commits_or_rolls_back(servers):
    """The pool's `connection()` block: an idle connection goes straight back; one a block left in a transaction gets
    psycopg's own exit (commit after success, rollback after an error), as psycopg_pool's block does."""

    async def body(pool):
        async with pool.connection() as conn:
            await execute(conn, "insert into direct_t (id) values (%(id)s)", {"id": "plain"})
        async with pool.connection() as conn:
            await conn.execute("begin")
            await execute(conn, "insert into direct_t (id) values (%(id)s)", {"id": "kept"})
        with pytest.raises(RuntimeError):
            async with pool.connection() as conn:
                await conn.execute("begin")
                await execute(conn, "insert into direct_t (id) values (%(id)s)", {"id": "dropped"})
                raise RuntimeError("the request failed")
        seen = []
        for _ in range(3):  # every connection of the pool is idle and usable again
            async with pool.connection() as conn:
                assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
                seen.append([r["id"] for r in await fetch_all(conn, "select id from direct_t order by id", {})])
        return seen

    assert _run(servers, body) == [["kept", "plain"]] * 3


def _limits(row) -> tuple[str, str]:
    return row["statement_timeout"], row["idle_in_transaction_session_timeout"]


LIMITS = ("select current_setting('statement_timeout') as statement_timeout, "
          "current_setting('idle_in_transaction_session_timeout') as idle_in_transaction_session_timeout")


def test_the_services_pool_limits_every_connection(live):

    async def read():
        async with live.svc.pool.connection() as conn:
            return await fetch_one(conn, LIMITS, {})

    assert _limits(live.run(read())) == ("1min", "1min")


def test_a_runaway_statement_is_cancelled_and_its_connection_serves_again(servers):

    async def scenario():
        pool = create_pool(servers["database_url"], min_size=1, max_size=1, statement_timeout_s=0.2,
                           idle_in_transaction_timeout_s=5)
        await pool.open()
        try:
            async with pool.connection() as conn:
                with pytest.raises(psycopg.errors.QueryCanceled):
                    await fetch_one(conn, "select pg_sleep(5)", {})
            async with pool.connection() as conn:  # the only connection, still good
                assert _limits(await fetch_one(conn, LIMITS, {})) == ("200ms", "5s")
                # A concurrent index build lifts the limit for itself, then the pool's comes back.
                await execute(conn, registry.q.session_build_memory)
                assert (await fetch_one(conn, LIMITS, {}))["statement_timeout"] == "0"
                await execute(conn, registry.q.reset_build_memory)
                assert _limits(await fetch_one(conn, LIMITS, {})) == ("200ms", "5s")
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_the_urls_own_options_are_kept(servers):
    url = psycopg.conninfo.make_conninfo(servers["database_url"], options="-c application_name=from-the-url")

    async def scenario():
        pool = create_pool(url, min_size=1, max_size=1, statement_timeout_s=3)
        await pool.open()
        try:
            async with pool.connection() as conn:
                row = await fetch_one(
                    conn, "select current_setting('application_name') as name, "
                    "current_setting('statement_timeout') as limit_", {})
        finally:
            await pool.close()
        return row

    assert asyncio.run(scenario()) == {"name": "from-the-url", "limit_": "3s"}
