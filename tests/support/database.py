"""A scratch database made ready as a process makes it at start: versions checked, migrated, self-tested."""

import asyncio

from collab.kit.db import selftest
from collab.kit.db.migrate import migrate


def prepare_database(url: str, **kwargs) -> selftest.Versions:
    """Run the start-up checks and migrations on `url`; the self-test's findings (kwargs go to selftest.check)."""

    async def go():
        await selftest.versions(url)
        await migrate(url)
        return await selftest.check(url, **kwargs)

    return asyncio.run(go())
