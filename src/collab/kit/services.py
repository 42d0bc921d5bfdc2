"""What a request or a job needs from the process: settings, pool, Redis, keyring, clock."""

import time
from dataclasses import dataclass, field
from typing import Callable

from arq import ArqRedis
from fastapi import Request
from psycopg_pool import AsyncConnectionPool

from collab.config import Settings
from collab.kit.crypto import Keyring


@dataclass
class Services:
    """Process-wide handles, built once at start; tests swap the clock."""

    settings: Settings
    pool: AsyncConnectionPool
    redis: ArqRedis | None
    keyring: Keyring
    clock: Callable[[], float] = field(default=time.time)

    def now_ms(self) -> int:
        """The current time in epoch milliseconds, from the injectable clock."""
        return int(self.clock() * 1000)


def services(request: Request) -> Services:
    """FastAPI dependency: the process's Services."""
    return request.app.state.services
