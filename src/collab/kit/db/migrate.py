"""Forward-only SQL migrations (migrations/NNNN_slug.sql), recorded in schema_migrations."""

import logging
import re
from pathlib import Path

import psycopg

from collab.kit.db.queries import Queries

log = logging.getLogger("collab.migrate")
MIGRATIONS = Path(__file__).with_name("migrations")
_FILE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_LOCK = 7_340_001  # advisory lock id: one migrator at a time across replicas
q = Queries.beside(__file__, "migrate.sql")


def available() -> list[tuple[int, Path]]:
    """Migration files in order."""
    found = []
    for path in sorted(MIGRATIONS.iterdir()):
        match = _FILE.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return found


def latest_version() -> int:
    return available()[-1][0] if available() else 0


async def migrate(url: str) -> list[str]:
    """Apply every pending migration, each in its own transaction; returns the names applied."""
    applied: list[str] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(q.lock, {"lock": _LOCK})
        try:
            await conn.execute(q.create_ledger)
            cur = await conn.execute(q.applied)
            done = {row[0] for row in await cur.fetchall()}
            for version, path in available():
                if version in done:
                    continue
                async with conn.transaction():
                    await conn.execute(path.read_text())
                    await conn.execute(q.record, {"version": version, "name": path.name})
                log.info("applied migration %s", path.name)
                applied.append(path.name)
        finally:
            await conn.execute(q.unlock, {"lock": _LOCK})
    return applied


async def current_version(conn: psycopg.AsyncConnection) -> int:
    """The highest applied migration, 0 when none."""
    cur = await conn.execute(q.ledger_exists)
    row = await cur.fetchone()
    if not _first(row):
        return 0
    cur = await conn.execute(q.current_version)
    return _first(await cur.fetchone())


def _first(row):
    return next(iter(row.values())) if isinstance(row, dict) else row[0]
