"""Where features keep per-document data, so migrations and deletions cover every feature.

Each table named here has `api_key_id`, `organization_id` and `document_id` columns. A feature that
stores per-document rows adds its table, and document migration, document and organization deletion
follow it without further code.

This module sits below every domain (it imports only kit), so organizations and documents both clear
feature data through it without importing each other.
"""

from collections.abc import Sequence

from psycopg import sql

from collab.kit.db import Queries, execute
from collab.kit.db.pool import Conn

DOCUMENT_TABLES = (
    "activities",
    "judgments",
    "judgment_embeddings",
    "notifications",
    "notification_batches",
    "notification_batch_items",
    "presence",
    "recordings",
    "crdt_editors",
    "webhook_crdt_pending",
    # Comments: threads key on (organization, annotation id), so a move never clashes; children carry document_id.
    "comment_annotations",
    "comments",
    "comment_reactions",
    "comment_mentions",
    "comment_reads",
    "live_states")
q = Queries.beside(__file__, "features.sql")


async def delete_feature_data(conn: Conn, *, api_key_id: str, organization_id: str,
                              document_ids: Sequence[str] | None) -> None:
    """Remove every feature's rows of some documents (None: of the whole organization)."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "ids": document_ids}
    for table in DOCUMENT_TABLES:
        await execute(conn, sql.SQL(q.delete_feature_rows).format(table=sql.Identifier(table)), params)
