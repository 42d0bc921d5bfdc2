"""Effective access: organization role, folder inheritance, group grants, expiry, access types and disabled states.

Pure functions over rows already read, so the rules are in one place and easy to test. Access flows
down: an organization role applies to every folder and document in it, a folder role to every
folder and document below it. Where several grants apply, the higher role wins. A resource's access type (its own,
else the nearest folder's above it, else organizationPrivate) narrows or widens that (ADR 0051): `restricted` keeps
organization roles out, `public` lets every user of the API key view it.
"""

from typing import Any, Iterable

from collab.kit.errors import not_found_message

RANK = {"viewer": 1, "editor": 2}
DISABLED = {"error": "Organization access is disabled.", "errorCode": "permission_denied"}
DOCUMENT_DISABLED = {"error": "Document access is disabled.", "errorCode": "permission_denied"}
DEFAULT_TYPE = "organizationPrivate"  # the rule before access types: organization roles reach everything in it
PUBLIC_ROLE = {"accessRole": "viewer"}  # what a public resource gives a user no grant reaches


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


def access_type(own: str | None, chain: list[str], folder_types: dict[str, str]) -> str:
    """A resource's access type: its own, else the nearest folder's in `chain` (nearest first), else the default."""
    return own or next((folder_types[f] for f in chain if f in folder_types), DEFAULT_TYPE)


def types_of(*, folders: dict[str, list[str]], documents: dict[str, dict[str, Any]],
             folder_types: dict[str, str]) -> dict[str, dict[str, str]]:
    """The effective access type of every existing folder and of each document read (ADR 0051), by section."""

    def chain(folder_id: str | None) -> list[str]:
        return [folder_id, *reversed(folders[folder_id])] if folder_id in folders else []

    return {
        "folders": {f: access_type(None, chain(f), folder_types)
                    for f in folders}, "documents": {
                        d: access_type(row.get("accessType"), chain(row.get("folder")), folder_types)
                        for d, row in documents.items()
                    }
    }


def with_types(answers: dict[str, Any], types: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Velt's `accessType` on each folder and document entry of existing resources, allowed or denied alike."""
    for answer in answers.values():
        for section in ("folders", "documents"):
            for ident, entry in answer[section].items():
                if ident in types[section] and entry.get("errorCode") != "does_not_exist":
                    answer[section][ident] = {**entry, "accessType": types[section][ident]}
    return answers


def reaching(kind: str, organization: list[dict[str, Any]], below: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The grants that reach a resource of an access type: organization roles stay out of a restricted one."""
    return below if kind == "restricted" else organization + below


def resolve(*, organization_id: str, organization: dict[str, Any] | None, grants: list[dict[str, Any]],
            folders: dict[str, list[str]], documents: dict[str, dict[str, Any]], folder_ids: list[str],
            document_ids: list[str], folder_types: dict[str, str] | None = None) -> dict[str, Any]:
    """One user's effective access to an organization and some of its folders and documents.

    `grants` are the user's live grants in the organization; `folders` maps every folder id to its
    ancestors; `documents` maps each existing requested document to {folder, accessType, disabled};
    `folder_types` the access types set on folders.
    """
    types = folder_types or {}
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

    def chain(folder_id: str | None) -> list[str]:
        """The folder and those above it, nearest first."""
        if folder_id is None or folder_id not in folders:
            return []
        return [folder_id, *reversed(folders[folder_id])]

    def entry(what: str, exists: bool, applicable: list[dict[str, Any]], kind: str = DEFAULT_TYPE,
              disabled: bool = False) -> dict[str, Any]:
        if not exists:
            return _missing(what)
        if organization["disabled"]:
            return dict(DISABLED)
        if disabled:
            return dict(DOCUMENT_DISABLED)
        found = best(applicable) or (dict(PUBLIC_ROLE) if kind == "public" else None)
        return found or _denied(what.lower())

    def folder(f: str) -> dict[str, Any]:
        above = chain(f)
        kind = access_type(None, above, types)
        return entry("Folder", f in folders,
                     reaching(kind, org_grants, [g for x in above for g in on.get(("folder", x), [])]), kind)

    def document(d: str) -> dict[str, Any]:
        row = documents.get(d) or {}
        above = chain(row.get("folder"))
        kind = access_type(row.get("accessType"), above, types)
        below = [g for x in above for g in on.get(("folder", x), [])] + on.get(("document", d), [])
        return entry("Document", d in documents, reaching(kind, org_grants, below), kind, bool(row.get("disabled")))

    return {
        "organization": {organization_id: entry("Organization", True, org_grants)},
        "folders": {f: folder(f)
                    for f in folder_ids}, "documents": {d: document(d)
                                                        for d in document_ids}
    }
