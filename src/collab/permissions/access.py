"""Effective access: organization role, folder inheritance, group grants, expiry and the disabled state.

Pure functions over rows already read, so the rules are in one place and easy to test. Access flows
down: an organization role applies to every folder and document in it, a folder role to every
folder and document below it. Where several grants apply, the higher role wins.
"""

from typing import Any, Iterable

from collab.kit.errors import not_found_message

RANK = {"viewer": 1, "editor": 2}
DISABLED = {"error": "Organization access is disabled.", "errorCode": "permission_denied"}


def _missing(what: str) -> dict[str, str]:
    return {"error": not_found_message(what.lower(), "permissions"), "errorCode": "does_not_exist"}


def _denied(what: str) -> dict[str, str]:
    return {"error": f"User does not have access to this {what}.", "errorCode": "permission_denied"}


def best(grants: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The winning role among grants, with its expiry (none when any winning grant is permanent)."""
    grants = list(grants)
    if not grants:
        return None
    top = max(RANK[g["access_role"]] for g in grants)
    winners = [g for g in grants if RANK[g["access_role"]] == top]
    role = winners[0]["access_role"]
    if any(g["expires_at"] is None for g in winners):
        return {"accessRole": role}
    return {"accessRole": role, "expiresAt": max(g["expires_at"] for g in winners)}


def resolve(*, organization_id: str, organization: dict[str, Any] | None, grants: list[dict[str, Any]],
            folders: dict[str, list[str]], documents: dict[str, str | None], folder_ids: list[str],
            document_ids: list[str]) -> dict[str, Any]:
    """One user's effective access to an organization and some of its folders and documents.

    `grants` are the user's live grants in the organization; `folders` maps every folder id to its
    ancestors; `documents` maps each existing requested document to its folder.
    """
    if organization is None:
        return {
            "organization": {organization_id: _missing("Organization")},
            "folders": {f: _missing("Folder")
                        for f in folder_ids}, "documents": {d: _missing("Document")
                                                            for d in document_ids}
        }
    on: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for g in grants:
        on.setdefault((g["resource_type"], g["resource_id"]), []).append(g)
    org_grants = on.get(("organization", organization_id), [])

    def folder_chain(folder_id: str | None) -> list[dict[str, Any]]:
        if folder_id is None or folder_id not in folders:
            return []
        chain = [folder_id, *folders[folder_id]]
        return [g for f in chain for g in on.get(("folder", f), [])]

    def entry(kind: str, exists: bool, applicable: list[dict[str, Any]]) -> dict[str, Any]:
        if not exists:
            return _missing(kind)
        if organization["disabled"]:
            return dict(DISABLED)
        return best(applicable) or _denied(kind.lower())

    return {
        "organization": {organization_id: entry("Organization", True, org_grants)},
        "folders": {f: entry("Folder", f in folders, org_grants + folder_chain(f))
                    for f in folder_ids}, "documents": {
                        d: entry("Document", d in documents, org_grants + folder_chain(documents.get(d)) + on.get(
                            ("document", d), []))
                        for d in document_ids
                    }
    }
