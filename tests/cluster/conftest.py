"""The multi-node fault suite: only under `make test-cluster` (COLLAB_CLUSTER=1), as root, with iproute2, Debian's
redis-server, redis-sentinel and haproxy (`make test-clients` installs them) and Node for the Yjs clients.

`make test` (the whole tree) does not collect this directory; `pytest tests/cluster` without COLLAB_CLUSTER=1
collects it and skips every test with the reason.
"""

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from cluster.topology import tool
from support.clients import REQUIRED, node
from support.js_clients import Clients

HERE = Path(__file__).resolve().parent
ENABLED = os.environ.get("COLLAB_CLUSTER") == "1"
SKIPPED = "the multi-node cluster suite runs under `make test-cluster` (COLLAB_CLUSTER=1)"
TOOLS = ("ip", "setpriv", "redis-server", "redis-sentinel", "haproxy")


def _named(config) -> bool:
    """This directory (or a file in it) was named on the command line."""
    for arg in config.args:
        path = Path(str(arg).split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    if not ENABLED and not _named(config):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    if ENABLED:
        return
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.skip(reason=SKIPPED))


def pytest_terminal_summary(terminalreporter):
    if not ENABLED:
        return
    from cluster.cluster import REPORT

    if REPORT:
        terminalreporter.section("cluster measurements (not assertions)")
        for line in REPORT:
            terminalreporter.write_line(line)


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (COLLAB_REQUIRE_CLIENTS=1)", pytrace=False)
    pytest.skip(reason)


def _check_host() -> None:
    """What the cluster needs from this machine, each missing piece named."""
    missing = [name for name in TOOLS if not tool(name)]
    if missing:
        _unavailable(f"the cluster suite needs {', '.join(missing)}: apt-get install redis-server redis-sentinel "
                     "haproxy (make test-clients)")
    if os.geteuid() != 0:
        _unavailable("the cluster suite needs root (network namespaces, a bridge, processes run as another user)")
    node()


@pytest.fixture(scope="module")
def cluster(request):
    """The cluster, started once for the module (cold: the database starts empty); torn down always."""
    _check_host()
    from cluster.cluster import REPORT, Cluster
    from cluster.nodes import Unreachable

    # Short: the servers' files (and HAProxy's admin socket) live under it.
    root = Path(tempfile.mkdtemp(prefix="clu-"))
    root.chmod(0o755)  # the Postgres nodes' server runs as another user
    failed = request.session.testsfailed
    started = time.monotonic()
    try:
        running = Cluster(root).start()
    except Unreachable as exc:
        refused = str(exc)
    else:
        refused = ""
    if refused:  # one line, no traceback: where, and the fix
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(refused, pytrace=False)
    REPORT.append(f"cluster started (servers, then a cold start of 2 API + 2 workers) in "
                  f"{time.monotonic() - started:.0f} s")
    yield running
    running.close()
    if request.session.testsfailed == failed:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"\ncluster files (logs, traces) kept in {root}")


@pytest.fixture
def healthy(cluster):
    """A cluster whose processes all serve and whose partitions are healed, before the test."""
    cluster.restore()
    return cluster


@pytest.fixture
def clients():
    """The Yjs clients (Node, tests/js/client.mjs) a test opened, closed at its end."""
    node()
    opened = Clients()
    yield opened
    opened.close_all()
