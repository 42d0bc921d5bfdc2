"""Embedding models as a choice per API key (ADR 0062): each key searches with its own model, a switch fills the new
model's vectors in ranges on the bulk lane while searches keep the old one, and a stopped or killed re-embed resumes
without embedding anything twice."""

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from collab.embeddings import catalog
from collab.embeddings.model import load
from collab.judgments import reembed
from collab.judgments import repository as judgments_repo
from support.factories import add_activities, judged, rejections_tenant
from support.helpers import error, issue_paths, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

TEXTS = [
    "The price claim lacks a source", "Alt text missing on hero image", "Tone is too casual", "Legal footer absent",
    "Consent checkbox missing", "Typo in heading", "Wrong launch date"
]
CONFIG = "/v2/workspace/apikeyconfig"


def seeded(client, live, texts=TEXTS):
    return rejections_tenant(client, live, texts)


def config(client, t) -> dict:
    return result(post(client, f"{CONFIG}/get", {}, t.headers))


def choose(client, t, model: str) -> dict:
    return result(post(client, f"{CONFIG}/update", {"embeddingModel": model}, t.headers))


def top(client, t, query: str) -> str:
    response = post(client, "/v2/memory/search", {"query": query}, t.headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]["results"][0]["recordId"]


def copy_model(db) -> str:
    """A registered model that is the fast one under another name (a real second model, cheap to fill)."""
    name = f"copy-{uuid.uuid4().hex[:6]}"
    db.execute("insert into embedding_models (name, source, dimensions) values (%s, 'default', 384)", (name, ))
    return name


def vectors(db, t, model: str) -> dict[tuple[str, str], int]:
    rows = db.execute(
        "select judgment_id, kind, count(*) as n from judgment_embeddings where api_key_id = %s and model = %s "
        "group by 1, 2", (t.api_key, model)).fetchall()
    return {(r["judgment_id"], r["kind"]): r["n"] for r in rows}


@pytest.fixture(scope="session")
def accurate_model(live):
    """The accurate model loaded in the session's process before the test that switches a key to it (its first
    load assembles, exports and checks it: minutes on two cores, which no job's deadline should race)."""
    if not catalog.installed(catalog.ACCURATE):
        pytest.skip("the accurate model's packages are not installed (requirements-models.lock)")
    return load(catalog.ACCURATE, cache_dir=live.settings.models_dir)


def test_a_key_on_each_model_searches_with_its_own_and_finds_its_own_text_first(client, live, db, accurate_model):
    fast = seeded(client, live)
    accurate = seeded(client, live, texts=TEXTS[::-1])
    before = config(client, accurate)
    assert before["embeddingModel"] == catalog.FAST and before["embeddingModelSwitch"] is None
    assert {catalog.FAST, catalog.ACCURATE} <= {m["name"] for m in before["embeddingModels"]}

    switching = choose(client, accurate, catalog.ACCURATE)
    # Until the switch is done the key searches with its old model; the switch says how far it is.
    assert switching["embeddingModel"] == catalog.FAST
    assert switching["embeddingModelSwitch"]["model"] == catalog.ACCURATE
    assert switching["embeddingModelSwitch"]["judgments"] == len(TEXTS)
    settle_jobs(live, accurate)

    after = config(client, accurate)
    assert after["embeddingModel"] == catalog.ACCURATE and after["embeddingModelSwitch"] is None
    assert config(client, fast)["embeddingModel"] == catalog.FAST  # the other key did not move
    assert vectors(db, accurate, catalog.ACCURATE) == vectors(db, accurate, catalog.FAST)  # every text, once
    assert vectors(db, fast, catalog.ACCURATE) == {}
    dims = db.execute(
        "select distinct vector_dims(embedding::vector) as d from judgment_embeddings "
        "where api_key_id = %s and model = %s", (accurate.api_key, catalog.ACCURATE)).fetchall()
    assert dims == [{"d": 768}]
    # Each finds its own decision by meaning, through HTTP, with its own model.
    assert top(client, accurate, "the picture at the top has no description for screen readers") == "j5"
    assert top(client, fast, "the picture at the top has no description for screen readers") == "j1"
    # A judgment added after the switch is embedded with the key's model only.
    result(add_activities(client, accurate, judged("late", "The discount code is expired")))
    settle_jobs(live, accurate)
    assert ("late", "review") in vectors(db, accurate, catalog.ACCURATE)
    assert ("late", "review") not in vectors(db, accurate, catalog.FAST)
    assert top(client, accurate, "that voucher no longer works") == "late"
    # /readyz names the models the workers hold, with the runtime and the device their batches run on.
    ready = client.get("/readyz").json()
    held = {e["model"]: e for e in ready["embedding"]}
    assert held[catalog.ACCURATE]["dimensions"] == 768 and held[catalog.FAST]["dimensions"] == 384
    assert held[catalog.ACCURATE]["runtime"] in ("onnx-fp32", "openvino-bf16", "torch")
    assert held[catalog.ACCURATE]["bulk"] in ("cpu", "cuda-onnx", "cuda-torch")


def test_switching_a_key_while_it_searches_fails_no_search(client, live, db):
    t = seeded(client, live)
    target = copy_model(db)
    answers: list[tuple[int, str | None]] = []

    def search_while(stop) -> None:
        while not stop():
            response = post(client, "/v2/memory/search", {"query": "hero image alt text"}, t.headers)
            hits = response.json().get("result", {}).get("results") or [{}]
            answers.append((response.status_code, hits[0].get("recordId")))

    done = False
    with ThreadPoolExecutor(1) as pool:
        searching = pool.submit(search_while, lambda: done)
        choose(client, t, target)
        settle_jobs(live, t)
        done = True
        searching.result(timeout=60)
    assert config(client, t)["embeddingModel"] == target
    during = len(answers)
    search_while(lambda: len(answers) >= during + 3)  # and a few after it landed
    assert len(answers) > during and all(a == (200, "j1") for a in answers), answers
    assert vectors(db, t, target) == vectors(db, t, catalog.FAST)


def test_a_new_judgment_during_a_switch_is_embedded_with_both_models(client, live, db, monkeypatch):
    t = seeded(client, live)
    target = copy_model(db)
    # The switch starts, but no worker takes its ranges yet (its range job finds none to claim).
    claim = judgments_repo.claim_range

    async def nothing_to_claim(conn, **kw):
        return None

    monkeypatch.setattr(judgments_repo, "claim_range", nothing_to_claim)
    started = live.run(
        reembed.start(live.svc, model=target, source="default", dimensions=384, only=t.api_key, activate=True,
                      parallel=1, range_size=1000))
    live.run(reembed.stop(live.svc, model=target, only=t.api_key))
    settle_jobs(live, t)
    assert config(client, t)["embeddingModelSwitch"]["state"] == "stopped"
    result(add_activities(client, t, judged("mid", "Footnote numbering is off")))
    settle_jobs(live, t)
    assert ("mid", "review") in vectors(db, t, target) and ("mid", "review") in vectors(db, t, catalog.FAST)
    # Resumed, it ends and switches: the new judgment is found under the new model.
    monkeypatch.setattr(judgments_repo, "claim_range", claim)
    again = live.run(
        reembed.start(live.svc, model=target, source="default", dimensions=384, only=t.api_key, activate=True,
                      parallel=1))
    assert again["id"] == started["id"] and again["resumed"] == 1
    settle_jobs(live, t)
    assert config(client, t)["embeddingModel"] == target
    assert top(client, t, "the footnotes are numbered wrongly") == "mid"


def test_a_reembed_killed_mid_range_resumes_with_every_judgment_embedded_once(client, live, db, monkeypatch):
    t = seeded(client, live)
    target = copy_model(db)
    embedder = load("default", target, cache_dir=live.settings.models_dir)  # what the range jobs load
    encoded: list[str] = []
    real_encode = embedder.encode
    monkeypatch.setattr(embedder, "encode", lambda texts, **kw: (encoded.extend(texts), real_encode(texts, **kw))[1])
    real_advance = judgments_repo.advance_range
    calls = {"n": 0}

    async def dies_after_its_first_batch(conn, **kw):
        calls["n"] += 1
        if calls["n"] == 2:  # the second batch's vectors are written, then the worker "dies" before its cursor moves
            raise ConnectionResetError("killed")
        return await real_advance(conn, **kw)

    monkeypatch.setattr(judgments_repo, "advance_range", dies_after_its_first_batch)
    run = live.run(
        reembed.start(live.svc, model=target, source="default", dimensions=384, only=t.api_key, kinds=("review", ),
                      batch_size=2, activate=True, parallel=1, range_size=5))
    assert run["ranges"] == 2 and run["total"] == 7
    settle_jobs(live, t)
    held = live.run(reembed.progress(live.svc, run["id"]))
    # The job's next try took the other range and finished it; the first stays held by the try that died.
    assert held["state"] == "running" and held["ranges_done"] == 1
    monkeypatch.setattr(judgments_repo, "advance_range", real_advance)

    resumed = live.run(
        reembed.start(live.svc, model=target, source="default", dimensions=384, only=t.api_key, kinds=("review", ),
                      batch_size=2, activate=True, parallel=2))
    assert resumed["id"] == run["id"]
    settle_jobs(live, t)
    done = live.run(reembed.progress(live.svc, run["id"]))
    assert done["state"] == "done" and done["ranges_done"] == 2 and done["judgments_done"] >= 7
    assert sorted(encoded) == sorted(f"rejected: {text}" for text in TEXTS)  # each text encoded exactly once
    assert vectors(db, t, target) == {(f"j{i}", "review"): 1 for i in range(len(TEXTS))}
    assert config(client, t)["embeddingModel"] == target


def test_choosing_a_model_refuses_what_the_server_does_not_offer_and_writes_nothing(client, live, db):
    t = new_tenant(client)
    for bad in ["no-such-model", "", 7, ["all-MiniLM-L6-v2"], "x" * 201]:
        response = post(client, f"{CONFIG}/update", {"embeddingModel": bad, "enableAdvancedQueries": True}, t.headers)
        assert ["embeddingModel"] in issue_paths(error(response, "INVALID_ARGUMENT")), bad
        assert config(client, t)["enableAdvancedQueries"] is False  # nothing half-written
    assert db.execute("select count(*) as n from reembed_runs where api_key_id = %s",
                      (t.api_key, )).fetchone()["n"] == 0


def test_choosing_the_model_a_key_already_uses_starts_nothing(client, live, db):
    t = seeded(client, live)
    assert choose(client, t, catalog.FAST)["embeddingModelSwitch"] is None
    assert db.execute("select count(*) as n from reembed_runs where api_key_id = %s",
                      (t.api_key, )).fetchone()["n"] == 0


def test_a_second_switch_supersedes_the_first(client, live, db):
    t = seeded(client, live)
    first, second = copy_model(db), copy_model(db)
    live.run(
        reembed.start(live.svc, model=first, source="default", dimensions=384, only=t.api_key, activate=True,
                      parallel=1))
    live.run(reembed.stop(live.svc, model=first, only=t.api_key))  # still under way when the key changes its mind
    settle_jobs(live, t)
    choose(client, t, second)
    settle_jobs(live, t)
    view = config(client, t)
    assert view["embeddingModel"] == second
    # The first switch, if it had not ended before it was stopped, stays stopped: never the key's model.
    assert view["embeddingModelSwitch"] is None or view["embeddingModelSwitch"]["state"] == "stopped"
    assert top(client, t, "hero image alt text") == "j1"


def test_another_keys_switch_never_touches_this_keys_vectors(client, live, db):
    a, b = seeded(client, live), seeded(client, live)
    target = copy_model(db)
    choose(client, a, target)
    settle_jobs(live, a)
    assert vectors(db, b, target) == {}
    assert config(client, b)["embeddingModel"] == catalog.FAST


def test_the_install_path_refuses_a_corrupted_part_with_one_line(tmp_path, monkeypatch):
    model = catalog.MODELS[catalog.ACCURATE]
    if not catalog.installed(model.name):
        pytest.skip("the accurate model's packages are not installed (requirements-models.lock)")
    dist, file, digest = model.parts[2]
    import importlib.metadata

    real = next(f for f in importlib.metadata.distribution(dist).files or () if f.name == file)
    broken = tmp_path / file
    with open(real.locate(), "rb") as src:
        broken.write_bytes(src.read(1 << 16) + b"corrupt")
    located = catalog._located
    monkeypatch.setattr(catalog, "_located", lambda d, f: broken if f == file else located(d, f))
    with pytest.raises(catalog.ModelUnavailable) as refused:
        catalog.assemble(model, tmp_path / "store")
    message = str(refused.value)
    assert "\n" not in message and file in message and dist in message and "make install" in message
    assert not (tmp_path / "store" / model.name).exists()  # nothing half-assembled is left to be used


def test_shipped_models_resolve_by_name_and_the_default_is_the_accurate_one():
    from collab.embeddings.model import resolve

    assert catalog.DEFAULT == catalog.ACCURATE
    assert resolve("default")[0] == catalog.FAST  # what earlier releases registered
    name, source = resolve(catalog.FAST)
    assert name == catalog.FAST and (Path(source) / "tokenizer.json").exists()
    assert resolve("/models/my-encoder/") == ("my-encoder", "/models/my-encoder/")


def test_one_live_run_per_model_and_scope(live, db, client):
    t = seeded(client, live)
    target = copy_model(db)

    async def both():
        return await asyncio.gather(*[
            reembed.start(live.svc, model=target, source="default", dimensions=384, only=t.api_key, parallel=1)
            for _ in range(2)
        ])

    runs = live.run(both())
    assert len({r["id"] for r in runs}) == 1, runs  # the second start resumes the first, never a twin run
    settle_jobs(live, t)
