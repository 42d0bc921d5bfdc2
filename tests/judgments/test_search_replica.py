"""COLLAB_DATABASE_READ_URL: search reads the standby, so a judgment is found there once the standby has replayed
it (its lag), not before; everything else keeps reading and writing the primary."""

import asyncio
import dataclasses
import uuid

import psycopg
from psycopg.conninfo import make_conninfo

from collab.judgments import search
from collab.judgments.schemas import SearchJudgments
from collab.kit.db import create_pool
from collab.kit.db.migrate import migrate
from support.factories import add_activities, judged
from support.helpers import enable_activities, new_tenant, settle_jobs


def test_search_reads_the_standby(client, live, servers):
    t = new_tenant(client)
    enable_activities(client, t)
    add_activities(client, t, judged("t1", "first", target="thread"), judged("t2", "second", target="thread"))
    settle_jobs(live, t)
    # A standby that has not replayed them yet: the same schema, none of the rows.
    name = f"collab_standby_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(servers["database_url"], autocommit=True) as admin:
        admin.execute(f"create database {name}")
    standby_url = make_conninfo(servers["database_url"], dbname=name)
    asyncio.run(migrate(standby_url))
    query = SearchJudgments(query="q", organizationId="org1", filters={"annotationId": "thread"})

    async def found(url: str | None) -> list[str]:
        reader = create_pool(url) if url else None
        if reader is not None:
            await reader.open()
        try:
            svc = dataclasses.replace(live.svc, read_pool=reader)
            out = await search.run(svc, None, api_key_id=t.api_key, data=query)
            return [r["recordId"] for r in out["results"]]
        finally:
            if reader is not None:
                await reader.close()

    assert live.run(found(None)) == ["t1", "t2"]
    assert live.run(found(standby_url)) == []
