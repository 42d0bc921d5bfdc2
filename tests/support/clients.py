"""Where the real clients the tests drive live: Node with tests/js's packages, and Chromium."""

import os
import shutil
from pathlib import Path

import pytest

JS_DIR = Path(__file__).parents[1] / "js"
CHROMIUM = os.environ.get("COLLAB_CHROMIUM", "/usr/bin/chromium")
# CI sets this so a missing client fails the run instead of skipping its tests.
REQUIRED = os.environ.get("COLLAB_REQUIRE_CLIENTS") == "1"


def _missing(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (COLLAB_REQUIRE_CLIENTS=1)", pytrace=False)
    pytest.skip(reason)


def node() -> str:
    """The node binary, with tests/js's packages installed (`make test` runs npm ci there)."""
    found = shutil.which("node")
    if not found:
        _missing("node is not installed")
    if not (JS_DIR / "node_modules" / "yjs").is_dir():
        _missing("tests/js packages are missing: run `make test-clients`")
    return found


def chromium() -> str:
    """Debian's Chromium for Playwright (`make test-clients` installs it)."""
    if not os.access(CHROMIUM, os.X_OK):
        _missing(f"{CHROMIUM} is missing: apt-get install chromium")
    return CHROMIUM


def axe_script() -> str:
    """axe-core's browser bundle, injected into console pages for the accessibility check."""
    path = JS_DIR / "node_modules" / "axe-core" / "axe.min.js"
    if not path.is_file():
        _missing("axe-core is missing: run `make test-clients`")
    return path.read_text()
