"""The job registry (kit/jobs/registry.py): a job declared with @job is served on its lane with its options."""

import subprocess
import sys

import pytest

from collab.kit.jobs import JOBS, job, lane, load, transaction
from collab.worker import functions


def test_every_declared_job_is_served_by_its_lanes_worker(live):
    declared = load()
    assert {"ask_ai", "extract_agents", "search_judgments", "derive_judgments", "deliver_webhook"} <= set(declared)
    for name, spec in declared.items():
        if not spec.run.__wrapped__.__module__.startswith("collab."):
            continue  # declared by a test after the session's worker started
        assert name in live.worker[spec.lane.name].functions, name
        others = [w.lane.name for w in live.worker.workers if w.lane is not spec.lane and name in w.functions]
        assert others == [], (name, others)


def test_declared_options_reach_arq(live):
    served = {f.name: f for f in functions(live.settings)}
    ask = served["ask_ai"]  # awaited: a deadline just past the API's, a second try, a short-lived result
    assert (ask.timeout_s, ask.max_tries, ask.keep_result_s) == (live.settings.ask_ai_timeout_s + 5, 2, 30)
    deliver = served["deliver_webhook"]  # tracked: one try more than its own, for tries that end with no outcome
    assert (deliver.timeout_s, deliver.max_tries, deliver.keep_result_s) == (live.settings.webhooks_timeout_s + 30, 4,
                                                                             None)
    assert lane("search_judgments").name == "search" and lane("migrate_document").name == "bulk"


def test_an_undeclared_job_is_refused_before_its_row_commits(live, db):

    async def go():
        async with transaction(live.svc.pool, live.svc.redis) as tx:
            await tx.enqueue("echo_tracked", api_key_id=None, value="kept?")
            await tx.enqueue("never_declared", api_key_id=None)

    with pytest.raises(KeyError, match="never_declared"):
        live.run(go())
    rows = db.execute("select 1 from jobs where args->>'value' = 'kept?' or function = 'never_declared'").fetchall()
    assert rows == []  # the whole transaction rolled back


def test_two_jobs_of_one_name_are_refused():

    def twin():

        async def echo(ctx: dict) -> None:
            """Not the probe of the same name."""

        return echo

    load()
    with pytest.raises(ValueError, match="two jobs are named echo"):
        job(awaited=True)(twin())
    with pytest.raises(ValueError, match="lane must be one of"):
        job(lane="nowhere")
    assert JOBS["echo"].run.__wrapped__.__module__ == "collab.kit.jobs.probes"


def test_declaring_the_jobs_imports_no_model_library():
    # The API processes import every job's declaration (for its lane); the libraries only jobs use stay out of them.
    heavy = ["litellm", "onnxruntime", "torch", "pandas", "openpyxl", "pypdf"]
    script = (
        f"import sys\nfrom collab.kit.jobs import load\nload()\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
