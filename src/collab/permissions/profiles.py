"""SQL of the user profile a grant or a token names; executes, never commits.

Permissions sit below users (users/add and groups write through the grants store), so the one profile
write permissions need lives here rather than in users.repository.
"""

from collab.kit.db import Queries, execute
from collab.kit.db.pool import Conn

q = Queries.beside(__file__, "profiles.sql")


async def record_user(conn: Conn, *, api_key_id: str, id: str, now: int, name: str | None = None,
                      email: str | None = None) -> None:
    """Create a user's profile, or change the fields given."""
    await execute(conn, q.record_user, {"api_key_id": api_key_id, "id": id, "name": name, "email": email, "now": now})
