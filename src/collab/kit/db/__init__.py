"""PostgreSQL access: the pool, named queries, helpers, migrations."""

from collab.kit.db.pool import create_pool, delete_in_batches, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.queries import Queries

__all__ = ["Queries", "create_pool", "delete_in_batches", "execute", "fetch_all", "fetch_one", "fetch_row"]
