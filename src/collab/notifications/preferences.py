"""Per-user notification preferences (notifications/config): inbox, e-mail and Slack, per organization or document.

A document's choice of a channel wins over the organization's, which wins over the default (ALL). `MINE` lets
through only notifications that involve the user (listed by name in `notifyUsers`, or named in a comment's data).
"""

from typing import Any, Iterable

from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.notifications import repository as repo
from collab.notifications.schemas import GetPreferences, SetPreferences
from collab.organizations.service import ensure as ensure_organization

CHANNELS = ("inbox", "email", "slack")
# slack is shown only once set; unset it is NONE: one Slack webhook serves the API key, so a user's notifications
# go there only when they ask (notifications/slack.py).
DEFAULTS = {"inbox": "ALL", "email": "ALL"}
SET = "User config set successfully."


def effective(rows: list[dict[str, Any]], *, document_id: str | None) -> dict[str, str]:
    """A user's channels in a document (or the organization) from their own rows: the document's choice, else the
    organization's."""
    levels = {r["document_id"]: r for r in rows}
    config = dict(DEFAULTS)
    for level in ("", document_id or ""):
        for channel in CHANNELS:
            value = (levels.get(level) or {}).get(channel)
            if value is not None:
                config[channel] = value
    return config


async def allowed(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                  user_ids: Iterable[str], involved: Iterable[str], channel: str) -> list[str]:
    """The users (of `user_ids`) who take notifications of this document on `channel`."""
    users = sorted(set(user_ids))
    if not users:
        return []
    rows = await repo.preferences(conn, api_key_id=api_key_id, organization_id=organization_id, user_ids=users,
                                  document_ids=[document_id] if document_id else [])
    mine = set(involved)
    by_user: dict[str, list[dict[str, Any]]] = {}
    for row in rows:  # once, not a scan of every row per user
        by_user.setdefault(row["user_id"], []).append(row)
    taken = []
    for user in users:
        choice = effective(by_user.get(user, []), document_id=document_id).get(channel, "NONE")
        if choice == "ALL" or (choice == "MINE" and user in mine):
            taken.append(user)
    return taken


async def set_config(svc: Services, *, tenant: Tenant, data: SetPreferences) -> dict[str, Any]:
    """Set channels for users in an organization or some of its documents; keyed by userId."""
    now = svc.now_ms()
    chosen = data.config.model_dump(exclude_none=True)
    documents = data.documentIds or [""]
    async with transaction(svc.pool, svc.redis) as tx:
        if not await ensure_organization(tx.conn, tenant=tenant, organization_id=data.organizationId, create=False,
                                         now=now):
            raise not_found("organization")
        await repo.set_preferences(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                   user_ids=data.userIds, document_ids=documents, inbox=chosen.get("inbox"),
                                   email=chosen.get("email"), slack=chosen.get("slack"), now=now)
        if chosen.get("email") == "NONE" and not data.documentIds:
            await repo.cancel_emails(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                     user_ids=data.userIds, reason="The user turned e-mail off.", now=now)
        if chosen.get("slack") == "NONE" and not data.documentIds:
            await repo.cancel_slack(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    user_ids=data.userIds, reason="The user turned Slack off.", now=now)
    results = {}
    for user in data.userIds:
        entry: dict[str, Any] = {"success": True, "userId": user, "message": SET}
        if data.documentIds and len(data.documentIds) == 1:
            entry["documentId"] = data.documentIds[0]
        elif data.documentIds:
            entry["documentIds"] = data.documentIds
        results[user] = entry
    return results


async def get_config(svc: Services, *, tenant: Tenant, data: GetPreferences) -> list[dict[str, Any]]:
    """A user's effective channels in each document asked for, and/or in the organization."""
    documents = data.documentIds or []
    async with svc.pool.connection() as conn:
        if not await ensure_organization(conn, tenant=tenant, organization_id=data.organizationId, create=False,
                                         now=svc.now_ms()):
            raise not_found("organization")
        rows = await repo.preferences(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                      user_ids=[data.userId], document_ids=documents)
    levels: list[str | None] = [*([None] if data.getOrganizationConfig else []), *documents]
    answer = []
    for document in levels:
        metadata = {"organizationId": data.organizationId, "apiKey": tenant.api_key_id, "userId": data.userId}
        if document is not None:
            metadata["documentId"] = document
        answer.append({"config": effective(rows, document_id=document), "metadata": metadata})
    return answer
