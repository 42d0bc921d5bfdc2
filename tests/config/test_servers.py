"""Which servers a process may run on: production never starts embedded ones unless asked (two replicas would each
make a database of their own), and Redis settings that cannot work are refused in one line at start."""

import os
import subprocess
import sys

import pytest

from collab.config import Settings

SECRET = "p" * 40


@pytest.mark.parametrize("missing, values", [
    ("COLLAB_DATABASE_URL and COLLAB_REDIS_URL or COLLAB_REDIS_SENTINELS", {}),
    ("COLLAB_DATABASE_URL", {"redis_sentinels": "s1:26379"}),
    ("COLLAB_REDIS_URL or COLLAB_REDIS_SENTINELS", {"database_url": "postgresql://db/collab"}),
])
def test_production_refuses_embedded_servers_unless_allowed(tmp_path, missing, values):
    production = Settings(data_dir=tmp_path, env="production", secret_key=SECRET, **values)
    with pytest.raises(RuntimeError, match=f"production without {missing}: refusing"):
        production.require_servers()
    Settings(data_dir=tmp_path, env="production", secret_key=SECRET, allow_embedded=True, **values).require_servers()
    Settings(data_dir=tmp_path, env="development", **values).require_servers()  # make run: embedded by design
    Settings(data_dir=tmp_path, env="production", secret_key=SECRET, database_url="postgresql://db/collab",
             redis_url="redis://r:6379").require_servers()


@pytest.mark.parametrize("role", [["api"], ["worker"], ["migrate"]])
def test_collab_refuses_to_start_in_production_without_servers(tmp_path, role):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    env.update(COLLAB_ENV="production", COLLAB_SECRET_KEY=SECRET, COLLAB_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, "-m", "collab.cli", *role], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "refusing to start embedded servers" in done.stderr
    assert done.stderr.startswith("collab: refusing to start: ") and "Traceback" not in done.stderr  # one line
    assert not (tmp_path / "data" / "pg").exists()  # no database was made


def test_migrate_in_production_needs_only_the_database(tmp_path):
    settings = Settings(data_dir=tmp_path, env="production", secret_key=SECRET, database_url="postgresql://db/c")
    settings.require_servers(redis=False)
    with pytest.raises(RuntimeError, match="without COLLAB_REDIS_URL or COLLAB_REDIS_SENTINELS"):
        settings.require_servers()
