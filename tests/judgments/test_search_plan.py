"""How a scoped vector search runs on either pgvector generation, the fusion, and the embedded data dir."""

import asyncio

import pytest

from collab.embeddings import registry
from collab.judgments import repository as repo
from collab.judgments.search import fuse, lexical_text, plan, query_vector
from collab.kit import embedded

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

ARGS = dict(k=30, exact_threshold=20_000, ef_max=1000)


def test_small_scopes_are_searched_exactly_on_both_generations():
    for version in ((0, 6, 2), (0, 8, 2)):
        how = plan(pgvector=version, in_scope=20_000, total=1_000_000, **ARGS)
        assert how.exact and how.settings == {}


def test_a_large_share_of_the_table_goes_through_the_graph():
    # Measured at 100k rows (AVX2): a 14.5% organization 23 ms exact against 13.7 by HNSW; a 5% one 6.8 against 26.
    assert not plan(pgvector=(0, 8, 2), in_scope=14_500, total=100_000, **ARGS).exact
    assert plan(pgvector=(0, 8, 2), in_scope=5_000, total=100_000, **ARGS).exact
    assert plan(pgvector=(0, 8, 2), in_scope=14_500, total=1_000_000, **ARGS).exact  # 1.45% of a larger graph
    # Without iterative scans a filtered graph search may come back short of k rows: exact, as before.
    assert plan(pgvector=(0, 7, 4), in_scope=14_500, total=100_000, **ARGS).exact


def test_pgvector_0_8_scans_iteratively():
    how = plan(pgvector=(0, 8, 2), in_scope=20_001, total=1_000_000, **ARGS)
    assert not how.exact
    assert how.settings["hnsw.iterative_scan"] == "relaxed_order"
    assert int(how.settings["hnsw.ef_search"]) >= 30
    # The tuple budget covers the scope's selectivity (about 1 in 50 rows): far more than k * 50 tuples.
    assert int(how.settings["hnsw.max_scan_tuples"]) >= 30 * 50
    assert (plan(pgvector=(1, 0), in_scope=50_000, total=60_000,
                 **ARGS).settings["hnsw.iterative_scan"] == "relaxed_order")


def test_the_first_beam_widens_over_a_graph_of_a_million_rows():
    # Measured: 100 keeps recall@10 at 0.99 over 100k rows; over 1M the half-precision graph needs 300 for 0.98.
    assert plan(pgvector=(0, 8, 2), in_scope=80_000, total=100_000, **ARGS).settings["hnsw.ef_search"] == "100"
    assert plan(pgvector=(0, 8, 2), in_scope=800_000, total=1_000_000, **ARGS).settings["hnsw.ef_search"] == "300"
    assert (plan(pgvector=(0, 8, 2), in_scope=800_000, total=1_000_000, k=30, exact_threshold=20_000,
                 ef_max=150).settings["hnsw.ef_search"] == "150")  # never past the operator's cap


def test_pgvector_0_6_widens_the_beam_without_iterative_scans():
    how = plan(pgvector=(0, 6, 2), in_scope=25_000, total=100_000, **ARGS)
    assert not how.exact and set(how.settings) == {"hnsw.ef_search"}
    assert how.settings["hnsw.ef_search"] == str(2 * 30 * 4)  # twice k, times the scope's 1-in-4 selectivity
    assert plan(pgvector=(0, 7, 4), in_scope=25_000, total=10_000_000, **ARGS).settings == {"hnsw.ef_search": "1000"}


def test_hnsw_searches_use_the_half_precision_index_from_pgvector_0_7():
    assert plan(pgvector=(0, 8, 2), in_scope=30_000, total=100_000, **ARGS).half
    assert plan(pgvector=(0, 7, 0), in_scope=30_000, total=100_000, **ARGS).half
    assert not plan(pgvector=(0, 6, 2), in_scope=30_000, total=100_000, **ARGS).half  # no halfvec before 0.7
    assert not plan(pgvector=(0, 8, 2), in_scope=100, total=100_000, **ARGS).half  # exact scans read full precision


def test_until_the_half_precision_index_is_built_searches_order_by_the_old_one():
    for version in ((0, 8, 2), (0, 7, 0)):
        assert not plan(pgvector=version, in_scope=30_000, total=100_000, indexed=False, **ARGS).half


LEGACY = "legacy-model"  # a model whose indexes a release before half precision built (3 dimensions)


def _legacy_indexes(db):
    for name, kind in zip([registry.index_name(LEGACY, kind, half=False) for kind in registry.KINDS], registry.KINDS):
        db.execute(f"create index {name} on judgment_embeddings using hnsw ((embedding::vector(3)) vector_cosine_ops)"
                   f" where model = '{LEGACY}' and kind = '{kind}'")


def _indexes(db):
    rows = db.execute(
        "select c.relname, i.indisvalid, pg_get_indexdef(c.oid) as def from pg_index i"
        " join pg_class c on c.oid = i.indexrelid where pg_get_indexdef(c.oid) like %s", (f"%'{LEGACY}'%", ))
    return {r["relname"]: (r["indisvalid"], r["def"]) for r in rows.fetchall()}


def _drop_all(db):
    for name in _indexes(db):
        db.execute(f"drop index {name}")


def _upgrade(live):
    return live.run(registry.upgrade_indexes(live.svc.pool, model=LEGACY, dimensions=3, grace_s=0))


def _indexed(live, kinds=registry.KINDS, ask=registry.indexed):

    async def check():
        async with live.svc.pool.connection() as conn:
            return await ask(conn, LEGACY, kinds)

    return live.run(check())


def test_an_upgraded_database_gets_half_precision_indexes_beside_the_old_ones_then_in_their_place(live, db):
    _legacy_indexes(db)
    try:
        assert not _indexed(live)  # searches order by the old index meanwhile
        # The old index can serve a full-precision order while the new one is built (sorts and scans off: the test
        # table is small, so the planner would rather sort).
        with db.transaction():
            db.execute("set local enable_seqscan = off")
            db.execute("set local enable_sort = off")
            plan_text = "\n".join(r["QUERY PLAN"] for r in db.execute(
                "explain select judgment_id from judgment_embeddings where model = %s and kind = 'review'"
                " order by embedding::vector(3) <=> '[1,0,0]'::vector(3) limit 5", (LEGACY, )).fetchall())
        assert f"Index Scan using {registry.index_name(LEGACY, 'review', half=False)}" in plan_text
        assert _upgrade(live) is True
        found = _indexes(db)
        assert set(found) == {registry.index_name(LEGACY, kind) for kind in registry.KINDS}
        assert all(valid and "halfvec_cosine_ops" in d and "halfvec(3)" in d for valid, d in found.values())
        assert _indexed(live)
        assert _upgrade(live) is False and _indexes(db) == found  # a second start builds and drops nothing
    finally:
        _drop_all(db)


def _sparser_indexes(db, kinds=registry.KINDS):
    """The half-precision indexes an earlier release built (ef_construction 64)."""
    for kind in kinds:
        db.execute(f"create index {registry.sparser_name(LEGACY, kind)} on judgment_embeddings"
                   " using hnsw ((embedding::halfvec(3)) halfvec_cosine_ops) with (m = 16, ef_construction = 64)"
                   f" where model = '{LEGACY}' and kind = '{kind}'")


def _serving(live, kinds=registry.KINDS):
    return _indexed(live, kinds, ask=registry.serving)


def test_the_sparser_graph_of_an_earlier_release_serves_until_its_replacement_is_built(live, db):
    _sparser_indexes(db)
    try:
        assert not _indexed(live)  # a worker builds the denser graph ...
        assert _serving(live)  # ... while searches go on ordering by the half-precision expression, on the old one
        assert _upgrade(live) is True
        found = _indexes(db)
        assert set(found) == {registry.index_name(LEGACY, kind) for kind in registry.KINDS}
        assert all(valid and "ef_construction='128'" in d and "halfvec(3)" in d for valid, d in found.values())
        assert _indexed(live) and _serving(live)
        assert _upgrade(live) is False and _indexes(db) == found
    finally:
        _drop_all(db)


def test_searches_of_a_kind_with_no_half_precision_index_order_by_the_full_precision_one(live, db):
    _legacy_indexes(db)
    try:
        assert not _serving(live) and not _serving(live, ("review", ))
        _sparser_indexes(db, ("review", ))
        assert _serving(live, ("review", )) and not _serving(live, ("content", ))
    finally:
        _drop_all(db)


def test_one_process_upgrades_at_a_time(live, db):
    _legacy_indexes(db)
    try:
        db.execute("select pg_advisory_lock(hashtext('collab:index_upgrade'))")  # another process is at it
        try:
            assert _upgrade(live) is False
            assert set(_indexes(db)) == {registry.index_name(LEGACY, kind, half=False) for kind in registry.KINDS}
        finally:
            db.execute("select pg_advisory_unlock(hashtext('collab:index_upgrade'))")
        assert _upgrade(live) is True
    finally:
        _drop_all(db)


def test_an_interrupted_build_is_built_again(live, db):
    _legacy_indexes(db)
    try:
        assert _upgrade(live) is True
        # What a build cut short leaves behind (CREATE INDEX CONCURRENTLY): the index, marked invalid.
        review = registry.index_name(LEGACY, "review")
        db.execute("update pg_index set indisvalid = false where indexrelid = %s::regclass", (review, ))
        assert not _indexed(live) and not _indexed(live, ("review", ))
        assert _indexed(live, ("content", ))  # each kind's searches ask for their own index
        assert _upgrade(live) is True
        assert _indexed(live) and _indexes(db)[review][0] is True
    finally:
        _drop_all(db)


def test_registration_builds_what_is_missing_or_invalid_in_its_transaction(live, db):

    async def ensure():
        async with live.svc.pool.connection() as conn:
            async with conn.transaction():
                await registry.ensure_indexes(conn, model=LEGACY, dimensions=3)

    _legacy_indexes(db)
    try:
        live.run(ensure())
        found = _indexes(db)
        assert set(found) == {registry.index_name(LEGACY, kind) for kind in registry.KINDS}
        db.execute("update pg_index set indisvalid = false where indexrelid = %s::regclass",
                   (registry.index_name(LEGACY, "content"), ))
        live.run(ensure())
        assert all(valid for valid, _ in _indexes(db).values()) and _indexed(live)
    finally:
        _drop_all(db)


def test_the_active_models_hnsw_search_is_served_by_its_half_precision_index(live):

    async def go():
        async with live.svc.pool.connection() as conn:
            active = await registry.active(conn)
            dims = active["dimensions"]
            async with conn.transaction():
                await registry.ensure_indexes(conn, model=active["name"], dimensions=dims)
                # The test tables are small, so a scan and a sort would be cheapest: ask whether the index can serve
                # the order at all.
                await conn.execute("set local enable_seqscan = off")
                await conn.execute("set local enable_sort = off")
                candidates = repo.sql.SQL(repo.q.candidates_indexed).format(distance=repo._distance(dims),
                                                                            order=repo._distance(dims, half=True),
                                                                            where=repo._scope_where(None, None))
                cur = await conn.execute(
                    repo.sql.SQL("explain ") + candidates, {
                        "k": 30, "vector": repo.vector_literal([1.0] + [0.0] * (dims - 1)), "model": active["name"],
                        "kind": "review", "api_key_id": "nobody", "organization_id": None, "document_id": None
                    })
                return active["name"], "\n".join(row["QUERY PLAN"] for row in await cur.fetchall())

    model, plan_text = live.run(go())
    assert f"Index Scan using {registry.index_name(model, 'review')}" in plan_text and "halfvec" in plan_text


def test_the_embedded_server_reports_pgvector_0_8_or_later(live):

    async def version():
        async with live.svc.pool.connection() as conn:
            return await registry.pgvector_version(conn)

    found = live.run(version())
    assert found >= (0, 8)
    assert "hnsw.iterative_scan" in plan(pgvector=found, in_scope=30_000, total=100_000, **ARGS).settings


def test_a_vector_reaches_postgres_exactly_as_the_model_gave_it(live):
    import numpy

    vector = numpy.random.default_rng(7).standard_normal(384).astype(numpy.float32)
    vector /= numpy.linalg.norm(vector)

    async def stored():
        async with live.svc.pool.connection() as conn:
            literal = repo.vector_literal(vector.tolist())
            return (await (await conn.execute("select %s::vector::text as v", (literal, ))).fetchone())["v"]

    back = numpy.asarray([float(x) for x in live.run(stored())[1:-1].split(",")], dtype=numpy.float32)
    assert numpy.array_equal(back, vector)  # every float32 value, not 7 digits of it


def test_a_connection_keeps_its_hnsw_settings_and_is_given_them_once(live):
    settings = plan(pgvector=(0, 8, 2), in_scope=30_000, total=100_000, **ARGS).settings
    wider = {**settings, "hnsw.ef_search": "200"}

    async def go():
        async with live.svc.pool.connection() as conn:
            shown = {}
            for given in (settings, settings, wider):
                await repo.use_settings(conn, given)
                shown[len(shown)] = (await (await conn.execute("show hnsw.ef_search")).fetchone())["hnsw.ef_search"]
            # The second call sent nothing: a setting changed behind its back is not put back.
            await conn.execute("set hnsw.ef_search = 40")
            await repo.use_settings(conn, wider)
            kept = (await (await conn.execute("show hnsw.ef_search")).fetchone())["hnsw.ef_search"]
            await conn.execute("reset hnsw.ef_search")
            repo._settings_of.pop(conn, None)
            return shown, kept

    shown, kept = live.run(go())
    assert shown == {0: "100", 1: "100", 2: "200"} and kept == "40"


def row(id, similarity):
    return {"id": id, "similarity": similarity}


def test_fusion_ranks_agreement_first_and_keeps_the_vector_order_without_lexical_weight():
    vector = [row("a", 0.9), row("b", 0.8), row("c", 0.7)]
    lexical = [row("c", 0.7), row("z", 0.1)]
    fused = fuse(vector, lexical, vector_weight=1, lexical_weight=1, rrf_k=60)
    assert [r["id"] for r in fused][:1] == ["c"] and {r["id"] for r in fused} == {"a", "b", "c", "z"}
    assert [r["id"] for r in fuse(vector, lexical, vector_weight=1, lexical_weight=0, rrf_k=60)] == ["a", "b", "c"]
    # The two top hits tie: the exact-term match goes first.
    assert [r["id"]
            for r in fuse(vector, [row("z", 0.1)], vector_weight=1, lexical_weight=1, rrf_k=60)][:2] == ["z", "a"]


def test_a_text_the_query_repeats_comes_first_whatever_the_lexical_ranking():
    # "a" is the stored text itself (cosine 1.0) but ranks low lexically; "b" shares both lists near the top.
    vector = [row("a", 1.0), row("b", 0.93), row("c", 0.9)]
    lexical = [row("b", 0.93), row("c", 0.9), row("a", 1.0)]
    assert [r["id"] for r in fuse(vector, lexical, vector_weight=1, lexical_weight=1, rrf_k=60)] == ["a", "b", "c"]
    # Without an identical text the fused order stands.
    vector[0] = row("a", 0.95)
    assert [r["id"] for r in fuse(vector, lexical, vector_weight=1, lexical_weight=1, rrf_k=60)][0] == "b"


def test_lexical_text_keeps_identifiers():
    assert lexical_text("what happened to SEC-4471 last week") == "SEC-4471"
    assert lexical_text("ISO 27001 A.12.4 logging") == "27001 A.12.4"
    assert lexical_text("the discount claim") == "the discount claim"
    assert lexical_text("status of ticket 4471, W-9 and §4.2 (log4j)") == "4471, W-9 §4.2 (log4j)"
    # A bare small number names nothing: a long sentence with one is prose, a short one is matched whole.
    assert lexical_text("is a SOC 2 Type I report enough for a vendor that handles data?") is None
    assert lexical_text("Schedule 2 SLA credits") == "Schedule 2 SLA credits"
    assert lexical_text("Called when the buffer is full; the default limit is 0.") is None
    # Prose (past MAX_LEXICAL_WORDS words, no identifier) is left to the vector alone.
    assert lexical_text("why did the reviewers turn down the discount claim for the spring launch") is None


def test_an_older_embedded_data_dir_is_kept_and_a_new_one_used(tmp_path):
    assert embedded.choose_pgdata(tmp_path, 18) == (tmp_path / "pg", None)  # nothing yet
    (tmp_path / "pg").mkdir()
    (tmp_path / "pg" / "PG_VERSION").write_text("18\n")
    assert embedded.choose_pgdata(tmp_path, 18) == (tmp_path / "pg", None)  # this version's own
    (tmp_path / "pg" / "PG_VERSION").write_text("16\n")
    assert embedded.choose_pgdata(tmp_path, 18) == (tmp_path / "pg18", tmp_path / "pg")  # older: left alone
    (tmp_path / "pg18").mkdir()
    (tmp_path / "pg18" / "PG_VERSION").write_text("18\n")
    assert embedded.choose_pgdata(tmp_path, 18) == (tmp_path / "pg18", tmp_path / "pg")
    (tmp_path / "pg" / "PG_VERSION").unlink()  # migrated, old files removed: pg18 stays the data
    assert embedded.choose_pgdata(tmp_path, 18) == (tmp_path / "pg18", None)
    text = embedded.upgrade_instructions(tmp_path / "pg", tmp_path / "pg18", old_major=16)
    assert "pg_dump" in text and "pg_restore" in text and "untouched" in text


def test_starting_beside_an_older_data_dir_leaves_it_untouched(tmp_path, caplog):
    old = tmp_path / "pg"
    old.mkdir()
    (old / "PG_VERSION").write_text("16\n")
    (old / "base").mkdir()
    (old / "base" / "kept").write_text("old data")
    embedded.start_postgres(tmp_path)
    try:
        major = embedded.server_major()
        assert (tmp_path / f"pg{major}" / "PG_VERSION").read_text().strip() == str(major)
        assert (old / "PG_VERSION").read_text() == "16\n" and (old / "base" / "kept").read_text() == "old data"
        assert "pg_dump" in caplog.text
    finally:
        embedded.stop_postgres(tmp_path)


class CountingEmbedder:
    """A stand-in model that records what it was asked to encode."""

    name = "counting"

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode_queries(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[1.0, 0.0] for _ in texts]


def test_a_query_cached_for_one_tenant_is_not_a_hit_for_another():
    model = CountingEmbedder()

    async def searches():
        first = await query_vector(model, api_key_id="tenant-a", text="layoffs in the Q3 plan")
        first[0] = 42.0  # a caller changing its vector does not change what the next search gets
        again = await query_vector(model, api_key_id="tenant-a", text="layoffs in the Q3 plan")
        other = await query_vector(model, api_key_id="tenant-b", text="layoffs in the Q3 plan")
        return again, other

    again, other = asyncio.run(searches())
    assert model.calls == [["layoffs in the Q3 plan"], ["layoffs in the Q3 plan"]]  # tenant A's repeat was cached
    assert again == other == [1.0, 0.0]


def test_a_worker_builds_in_the_background_and_a_cli_never_does(live, db):
    from collab.judgments.tasks import ActiveModel, _upgrade_indexes

    _legacy_indexes(db)
    try:
        cli = ActiveModel()
        live.run(_upgrade_indexes(cli, live.svc, model=LEGACY, dimensions=3))
        assert cli.upgrade is None and not _indexed(live)
        worker = ActiveModel(upgrades=True)

        async def read_twice():
            await _upgrade_indexes(worker, live.svc, model=LEGACY, dimensions=3)  # returns before the build ends
            started = worker.upgrade
            assert started is not None and worker.indexed is None
            await started
            await _upgrade_indexes(worker, live.svc, model=LEGACY, dimensions=3)  # the next registry read
            return started.result(), worker.upgrade is started

        assert live.run(read_twice()) == (True, True)  # built once; the next read only notes it
        assert worker.indexed == LEGACY and _indexed(live)
    finally:
        _drop_all(db)
