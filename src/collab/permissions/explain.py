"""Who can see a document, and why: every live grant that reaches it (on the document, a folder above it or the
organization; a user's own or through a group), with the winning role decided by the same rule as access.py."""

from typing import Any

from collab.documents import repository as documents_repo
from collab.kit.auth import Tenant
from collab.kit.errors import not_found
from collab.kit.services import Services
from collab.organizations import repository as organizations_repo
from collab.permissions import access
from collab.permissions import repository as repo


def _kind(grant: dict[str, Any]) -> str:
    """The reason in one word: group (a group's grant), else the level the grant sits on (direct: the document)."""
    if grant["group_id"] is not None:
        return "group"
    return {"document": "direct", "folder": "folder", "organization": "organization"}[grant["resource_type"]]


def explain_rows(grants: list[dict[str, Any]], *, disabled: bool, kind: str = access.DEFAULT_TYPE,
                 document_disabled: bool = False) -> list[dict[str, Any]]:
    """Per user: the effective role (or why none) and every grant behind it, the deciding ones marked; on a restricted
    document organization roles decide nothing, on a public one a user no grant reaches still views."""
    by_user: dict[str, list[dict[str, Any]]] = {}
    for grant in grants:
        by_user.setdefault(grant["user_id"], []).append(grant)
    users = []
    off = access.DISABLED if disabled else access.DOCUMENT_DISABLED if document_disabled else None
    for user_id, held in sorted(by_user.items()):
        reach = access.reaching(kind, [g for g in held if g["resource_type"] == "organization"],
                                [g for g in held if g["resource_type"] != "organization"])
        winner = access.best(reach) or (dict(access.PUBLIC_ROLE) if kind == "public" else None)
        reasons = [{
            "kind": _kind(g), "resourceType": g["resource_type"], "resourceId": g["resource_id"],
            "groupId": g["group_id"], "accessRole": g["access_role"], "expiresAt": g["expires_at"],
            "decides": off is None and g in reach and winner is not None and g["access_role"] == winner["accessRole"]
        } for g in held]
        entry: dict[str, Any] = {"userId": user_id, "reasons": reasons}
        entry.update(off or winner or {
            "error": "The document is restricted: organization roles do not reach it.", "errorCode": "permission_denied"
        })
        users.append(entry)
    return users


async def explain_document(svc: Services, *, tenant: Tenant, organization_id: str, document_id: str) -> dict[str, Any]:
    """The users with access to one document and why: {organizationId, documentId, folderPath, disabled, users}."""
    key = {"api_key_id": tenant.api_key_id, "organization_id": organization_id}
    async with svc.pool.connection() as conn:
        organization = await organizations_repo.get(conn, api_key_id=tenant.api_key_id, id=organization_id)
        folders = await repo.document_folders(conn, **key, ids=[document_id]) if organization else {}
        if document_id not in folders:
            raise not_found("document")
        assert organization is not None  # without it there are no folders, so the line above answered
        folder_id = folders[document_id]
        path: list[str] = []
        if folder_id is not None:
            tree = {r["id"]: list(r["ancestors"]) for r in await documents_repo.folder_tree(conn, **key)}
            path = [*tree.get(folder_id, []), folder_id]
        resources = [("organization", organization_id), *(("folder", f) for f in path), ("document", document_id)]
        grants = await repo.grants_on(conn, **key, resources=resources, now_ms=svc.now_ms())
        settings = await repo.access_settings(conn, **key, id=document_id, path=path)
    disabled = bool(organization["disabled"])
    kind = access.access_type(settings["access_type"], path[::-1], settings["folder_types"])
    return {
        "organizationId": organization_id, "documentId": document_id, "folderPath": path, "disabled": disabled,
        "accessType": kind, "documentDisabled": settings["disabled"], "permissionProvider": settings["provider"],
        "users": explain_rows(grants, disabled=disabled, kind=kind, document_disabled=settings["disabled"])
    }
