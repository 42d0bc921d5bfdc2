"""Where features keep per-document data, so migrations and deletions cover every feature.

Each table named here has `api_key_id`, `organization_id` and `document_id` columns. A feature that
stores per-document rows adds its table, and document migration, document and organization deletion
follow it without further code.
"""

DOCUMENT_TABLES = (
    "activities", "judgments", "judgment_embeddings",
    "notifications", "notification_batches", "notification_batch_items",
    "presence", "recordings", "crdt_editors", "webhook_crdt_pending",
)
