"""The gate of the tests that run the embedded local model (collab.localmodel): skipped where it cannot run here
(no cyllama wheel for the platform, weights not installed), failed instead with COLLAB_REQUIRE_LOCAL_MODEL=1."""

import os
import tempfile
from pathlib import Path

import pytest

from collab.localmodel import models


def require(model: str) -> None:
    """Skip the calling test module unless `model` can run here (fail instead under COLLAB_REQUIRE_LOCAL_MODEL=1)."""
    try:
        models.check_runtime()
        models.weights_path(model, Path(tempfile.gettempdir()) / "collab-localmodel")  # a single file: used in place
    except models.Unavailable as exc:
        if os.environ.get("COLLAB_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(f"COLLAB_REQUIRE_LOCAL_MODEL=1 but the local model cannot run: {exc}", pytrace=False)
        pytest.skip(f"the local model is not installed: {exc}", allow_module_level=True)
