"""`collab reembed` (resumable, skips unchanged rows, activates atomically) and `collab judgments backfill`."""

import uuid

import pytest

from collab.judgments.reembed import backfill, reembed
from support.embedders import Counting
from support.factories import rejections_tenant
from support.helpers import post

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

TEXTS = [
    "The price claim lacks a source", "Alt text missing on hero image", "Tone is too casual", "Legal footer absent",
    "Consent checkbox missing", "Typo in heading", "Wrong launch date"
]


def seeded(client, live):
    return rejections_tenant(client, live, TEXTS)


def test_reembed_killed_halfway_then_resumed_embeds_each_row_once(client, live, db):
    t = seeded(client, live)
    model = Counting(f"copy-{uuid.uuid4().hex[:6]}")
    first = live.run(
        reembed(live.svc, model, source="default", kinds=("review", ), batch_size=3, max_batches=1, only=t.api_key,
                progress=None))
    assert first["embedded"] == 3  # "killed" after the first batch
    second = live.run(
        reembed(live.svc, model, source="default", kinds=("review", ), batch_size=3, only=t.api_key, progress=None))
    assert {k: second[k] for k in ("judgments", "embedded", "skipped")} == {"judgments": 7, "embedded": 4, "skipped": 3}
    assert sorted(model.seen) == sorted(f"rejected: {text}" for text in TEXTS)
    rows = db.execute(
        "select judgment_id, count(*) as n from judgment_embeddings where api_key_id = %s and model = %s group by 1",
        (t.api_key, model.name)).fetchall()
    assert len(rows) == 7 and all(r["n"] == 1 for r in rows)
    # The old model's vectors are still there; search still uses it until activation.
    old = db.execute("select count(*) as n from judgment_embeddings where api_key_id = %s and model <> %s",
                     (t.api_key, model.name)).fetchone()["n"]
    assert old == 7
    assert (db.execute("select active from embedding_models where name = %s", (model.name, )).fetchone()["active"]
            is False)


def test_reembed_activate_switches_the_keys_search(client, live, db):
    t = seeded(client, live)
    previous = db.execute("select name from embedding_models where active").fetchone()["name"]
    name = f"copy-{uuid.uuid4().hex[:6]}"
    db.execute("insert into embedding_models (name, source, dimensions) values (%s, 'default', 384)", (name, ))
    model = Counting(name)
    try:
        live.run(
            reembed(live.svc, model, source="default", batch_size=100, only=t.api_key, activate=True, progress=None))
        # With --api-key, only that key switches (its own choice from now on); the deployment's model stays.
        assert db.execute("select name from embedding_models where active").fetchone()["name"] == previous
        assert db.execute("select embedding_model from api_keys where id = %s",
                          (t.api_key, )).fetchone()["embedding_model"] == name
        hnsw = db.execute("select count(*) as n from pg_indexes where indexdef like %s",
                          (f"%model = '{name}'%", )).fetchone()
        assert hnsw["n"] == 2
        out = post(client, "/v2/memory/search", {"query": "hero image alt text"}, t.headers).json()["result"]
        assert out["results"][0]["recordId"] == "j1"
    finally:
        from collab.embeddings.registry import activate

        async def restore():
            async with live.svc.pool.connection() as conn:
                async with conn.transaction():
                    await activate(conn, model=previous)

        live.run(restore())


def test_backfill_rederives_lost_judgments(client, live, db):
    t = seeded(client, live)
    db.execute("delete from judgments where api_key_id = %s", (t.api_key, ))
    assert post(client, "/v2/memory/search", {"query": "typo"}, t.headers).json()["result"]["results"] == []
    seen = live.run(backfill(live.svc, only=t.api_key, progress=None))
    assert seen == 7
    out = post(client, "/v2/memory/search", {"query": "spelling error in the title"}, t.headers).json()["result"]
    assert out["results"][0]["recordId"] == "j5"
