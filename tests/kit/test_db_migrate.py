"""Migrations (kit/db/migrate.py): each recorded once, and a rerun does nothing."""

import asyncio

from collab.kit.db.migrate import available, migrate


def test_migrations_recorded_and_rerun_is_noop(servers, db, live):
    versions = [row["version"] for row in db.execute("select version from schema_migrations order by 1").fetchall()]
    assert versions == [v for v, _ in available()]
    assert asyncio.run(migrate(servers["database_url"])) == []
