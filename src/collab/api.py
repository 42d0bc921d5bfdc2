"""Every domain router, mounted under both /v1 and /v2."""

from fastapi import FastAPI

from collab.activities.routes import router as activities
from collab.comments.routes import router as comments
from collab.ask_ai.routes import router as ask_ai
from collab.crdt.routes import router as crdt
from collab.documents.routes import router as documents
from collab.extraction.routes import router as extraction
from collab.kit.openapi import ERRORS
from collab.judgments.routes import router as judgments
from collab.notifications.routes import router as notifications
from collab.organizations.routes import router as organizations
from collab.permissions.routes import router as permissions
from collab.presence.routes import router as presence
from collab.realtime.routes import router as realtime
from collab.recordings.routes import router as recordings
from collab.users.routes import router as users
from collab.webhooks.routes import router as webhooks
from collab.workspaces.routes import router as workspaces

ROUTERS = [
    workspaces, organizations, documents, users, permissions, notifications, activities, presence, recordings, crdt,
    extraction, judgments, ask_ai, webhooks, comments, realtime,
]


def mount(app: FastAPI) -> None:
    """Mount each domain router under /v2 (documented) and /v1 (same handlers; real clients call either)."""
    for router in ROUTERS:
        app.include_router(router, prefix="/v2", responses=ERRORS)
        app.include_router(router, prefix="/v1", include_in_schema=False)
