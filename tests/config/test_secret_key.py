"""The secret key (config.py): required in production, created private in development, and never missing on
an address off loopback (issue #14, 9)."""

import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from collab.config import Settings, require_safe_secret

# --- secrets ----------------------------------------------------------------------------------------------


def settings(tmp_path, **values):
    return Settings(data_dir=tmp_path, **values)


def test_production_refuses_a_missing_or_short_secret(tmp_path):
    with pytest.raises(RuntimeError, match="COLLAB_SECRET_KEY is required"):
        settings(tmp_path, env="production", secret_key=None).resolved_secret_key()
    with pytest.raises(RuntimeError, match="at least 32"):
        settings(tmp_path, env="production", secret_key="x" * 31).resolved_secret_key()
    assert settings(tmp_path, env="production", secret_key="x" * 32).resolved_secret_key() == "x" * 32
    assert settings(tmp_path, env="development", secret_key="short").resolved_secret_key() == "short"


def test_development_secret_is_created_private_once(tmp_path):
    s = settings(tmp_path / "data", env="development", secret_key=None)
    with ThreadPoolExecutor(8) as pool:
        secrets = set(pool.map(lambda _: s.resolved_secret_key(), range(16)))
    assert len(secrets) == 1 and len(secrets.pop()) >= 32
    path = tmp_path / "data" / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret_key"]  # no temporary file left behind
    assert s.resolved_secret_key() == path.read_text().strip()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"])
def test_development_without_a_secret_may_listen_on_loopback(tmp_path, host):
    require_safe_secret(settings(tmp_path, env="development", secret_key=None), host=host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "collab.example.com"])
def test_development_without_a_secret_refuses_to_listen_off_loopback(tmp_path, host):
    with pytest.raises(RuntimeError, match="COLLAB_SECRET_KEY"):
        require_safe_secret(settings(tmp_path, env="development", secret_key=None), host=host)
    require_safe_secret(settings(tmp_path, env="development", secret_key="y" * 40), host=host)
    require_safe_secret(settings(tmp_path, env="production", secret_key="y" * 40), host=host)


def test_collab_api_refuses_to_start_off_loopback_without_a_secret(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    # Servers that refuse connections: were the check missing, the app would fail at start, not run on.
    env.update(COLLAB_ENV="development", COLLAB_DATA_DIR=str(tmp_path), COLLAB_PORT="58461",
               COLLAB_DATABASE_URL="postgresql://127.0.0.1:9/none", COLLAB_REDIS_URL="redis://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-m", "collab.cli", "api", "--host", "0.0.0.0"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "without COLLAB_SECRET_KEY" in done.stderr
    env.update(COLLAB_ENV="production", COLLAB_SECRET_KEY="too-short")
    done = subprocess.run([sys.executable, "-m", "collab.cli", "api"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "production needs at least 32" in done.stderr


def test_docker_image_runs_in_production_mode():
    dockerfile = (Path(__file__).parents[2] / "Dockerfile").read_text()
    assert "COLLAB_ENV=production" in dockerfile
