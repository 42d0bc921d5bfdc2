"""SQL of knowledge sources, their chunks, rules, vectors and upload slots; executes, never commits."""

from datetime import datetime
from typing import Any

from collab.judgments.repository import vector_literal
from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def count_sources(conn: Conn, *, api_key_id: str) -> int:
    row = await fetch_one(conn, q.count_sources, {"api_key_id": api_key_id})
    return int(row["n"]) if row else 0


async def count_chunks(conn: Conn, *, api_key_id: str) -> int:
    return int((await fetch_one(conn, q.count_chunks, {"api_key_id": api_key_id}) or {"n": 0})["n"])


async def insert_source(conn: Conn, *, api_key_id: str, id: str, file_name: str | None, mime_type: str, content: bytes,
                        sha256: str, organization_id: str | None, document_id: str | None) -> None:
    await execute(
        conn, q.insert_source, {
            "api_key_id": api_key_id, "id": id, "file_name": file_name, "mime_type": mime_type,
            "size_bytes": len(content), "sha256": sha256, "content": content, "organization_id": organization_id,
            "document_id": document_id
        })


async def get_source(conn: Conn, *, api_key_id: str, source_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_source, {"id": source_id, "api_key_id": api_key_id})


async def list_sources(conn: Conn, *, api_key_id: str, limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.list_sources, {"api_key_id": api_key_id, "limit": limit})


async def source_content(conn: Conn, *, api_key_id: str, source_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.source_content, {"id": source_id, "api_key_id": api_key_id})


async def canonical_text(conn: Conn, *, api_key_id: str, source_id: str) -> str | None:
    row = await fetch_one(conn, q.canonical_text, {"id": source_id, "api_key_id": api_key_id})
    return row["canonical_text"] if row else None


async def mark_ready(conn: Conn, *, source_id: str, canonical_text: str, rule_based: bool,
                     used_raw_fallback: bool) -> int:
    return await execute(conn, q.mark_ready, {
        "id": source_id, "canonical_text": canonical_text, "rule_based": rule_based,
        "used_raw_fallback": used_raw_fallback
    })


async def mark_failed(conn: Conn, *, source_id: str, reason: str, error: str) -> None:
    await execute(conn, q.mark_failed, {"id": source_id, "reason": reason, "error": error[:2000]})


async def bump_version(conn: Conn, *, api_key_id: str, source_id: str, canonical_text: str) -> int | None:
    """The source's new version number; None when the source is gone."""
    row = await fetch_one(conn, q.bump_version,
                          {"id": source_id, "api_key_id": api_key_id, "canonical_text": canonical_text})
    return int(row["version"]) if row else None


async def prune_versions(conn: Conn, *, source_id: str, version: int, kept: int) -> None:
    await execute(conn, q.prune_versions, {"source_id": source_id, "version": version, "kept": kept})


async def lock_uploads(conn: Conn, *, api_key_id: str) -> None:
    await execute(conn, q.lock_uploads, {"api_key_id": api_key_id})


async def fail_lost_ingests(conn: Conn, *, before: datetime) -> int:
    """Fail the ingests processing since before `before`; how many."""
    return await execute(conn, q.fail_lost_ingests, {"before": before})


async def insert_version(conn: Conn, *, api_key_id: str, source_id: str, version: int, canonical_text: str,
                         rule_count: int) -> None:
    await execute(
        conn, q.insert_version, {
            "api_key_id": api_key_id, "source_id": source_id, "version": version, "canonical_text": canonical_text,
            "rule_count": rule_count
        })


async def replace_chunks(conn: Conn, *, api_key_id: str, source_id: str, chunks: list[dict[str, Any]],
                         model: str | None) -> None:
    """Replace a source's chunks (each {id, text, hash, vector}); vectors are stored when `model` is given."""
    await execute(conn, q.delete_chunks, {"source_id": source_id})
    async with conn.cursor() as cur:
        await cur.executemany(
            q.insert_chunk,
            [{"id": c["id"], "api_key_id": api_key_id, "source_id": source_id, "ordinal": n, "text": c["text"]}
             for n, c in enumerate(chunks)])
        if model is not None:
            await cur.executemany(q.insert_chunk_embedding, [{
                "id": c["id"], "model": model, "api_key_id": api_key_id, "content_hash": c["hash"],
                "embedding": vector_literal(c["vector"])
            } for c in chunks])


async def current_rules(conn: Conn, *, api_key_id: str, source_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.current_rules, {"api_key_id": api_key_id, "source_id": source_id})


async def replace_rules(conn: Conn, *, api_key_id: str, source_id: str, version: int, rules: list[dict[str, Any]],
                        model: str | None) -> None:
    """Replace a source's rules (each {id, content, category, hash, vector}) by a version's."""
    await execute(conn, q.delete_rules, {"source_id": source_id})
    async with conn.cursor() as cur:
        await cur.executemany(q.insert_rule, [{
            "id": r["id"], "api_key_id": api_key_id, "source_id": source_id, "version": version, "ordinal": n,
            "content": r["content"], "category": r["category"]
        } for n, r in enumerate(rules)])
        if model is not None:
            await cur.executemany(q.insert_rule_embedding, [{
                "id": r["id"], "model": model, "api_key_id": api_key_id, "content_hash": r["hash"],
                "embedding": vector_literal(r["vector"])
            } for r in rules])


async def delete_source(conn: Conn, *, api_key_id: str, source_id: str) -> dict[str, Any] | None:
    """Delete a source that is not processing; its chunk and rule counts, or None when nothing was deleted."""
    return await fetch_one(conn, q.delete_source, {"id": source_id, "api_key_id": api_key_id})


def _narrow(source_ids: list[str] | None) -> dict[str, Any]:
    return {"source_ids": source_ids}


async def search_chunks(conn: Conn, *, api_key_id: str, model: str, vector: list[float], source_ids: list[str] | None,
                        limit: int, scope: tuple[str | None, str | None] | None = None) -> list[dict[str, Any]]:
    """Nearest chunks; `scope` (organization, document) keeps key-wide sources and those of that scope only."""
    org, doc = scope if scope is not None else (None, None)
    return await fetch_all(
        conn, q.search_chunks, {
            "api_key_id": api_key_id, "model": model, "vector": vector_literal(vector), "limit": limit, "scoped": scope
            is not None, "organization_id": org, "document_id": doc, **_narrow(source_ids)
        })


async def search_rules(conn: Conn, *, api_key_id: str, model: str, vector: list[float], source_ids: list[str] | None,
                       limit: int, scope: tuple[str | None, str | None] | None = None) -> list[dict[str, Any]]:
    """Nearest rules; `scope` as for `search_chunks`."""
    org, doc = scope if scope is not None else (None, None)
    return await fetch_all(
        conn, q.search_rules, {
            "api_key_id": api_key_id, "model": model, "vector": vector_literal(vector), "limit": limit, "scoped": scope
            is not None, "organization_id": org, "document_id": doc, **_narrow(source_ids)
        })


async def recent_chunks(conn: Conn, *, api_key_id: str, source_ids: list[str] | None,
                        limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.recent_chunks, {"api_key_id": api_key_id, "limit": limit, **_narrow(source_ids)})


async def recent_rules(conn: Conn, *, api_key_id: str, source_ids: list[str] | None,
                       limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.recent_rules, {"api_key_id": api_key_id, "limit": limit, **_narrow(source_ids)})


async def scoped_rules(conn: Conn, *, api_key_id: str, organization_id: str | None, document_id: str | None,
                       limit: int) -> list[dict[str, Any]]:
    return await fetch_all(
        conn, q.scoped_rules,
        {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "limit": limit})


async def updated_since(conn: Conn, *, api_key_id: str, since: datetime) -> bool:
    row = await fetch_one(conn, q.updated_since, {"api_key_id": api_key_id, "since": since})
    return bool(row and row["updated"])


async def outstanding_uploads(conn: Conn, *, api_key_id: str, now: datetime) -> int:
    row = await fetch_one(conn, q.outstanding_uploads, {"api_key_id": api_key_id, "now": now})
    return int(row["n"]) if row else 0


async def insert_upload(conn: Conn, *, api_key_id: str, id: str, organization_id: str | None, document_id: str | None,
                        mime_type: str, file_name: str | None, declared_size: int, expires_at: datetime) -> None:
    await execute(
        conn, q.insert_upload, {
            "api_key_id": api_key_id, "id": id, "organization_id": organization_id, "document_id": document_id,
            "mime_type": mime_type, "file_name": file_name, "declared_size": declared_size, "expires_at": expires_at
        })


async def store_upload(conn: Conn, *, api_key_id: str, upload_id: str, content: bytes | bytearray,
                       now: datetime) -> bool:
    return await execute(conn, q.store_upload,
                         {"id": upload_id, "api_key_id": api_key_id, "content": content, "now": now}) == 1


async def upload_slot(conn: Conn, *, api_key_id: str, upload_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.upload_slot, {"id": upload_id, "api_key_id": api_key_id})


async def stored_bytes(conn: Conn, *, api_key_id: str) -> int:
    """Bytes of original files the key's knowledge holds (sources and uploaded slots)."""
    return int((await fetch_one(conn, q.stored_bytes, {"api_key_id": api_key_id}) or {"n": 0})["n"])


async def processing_in_workspace(conn: Conn, *, workspace_id: str) -> int:
    return int((await fetch_one(conn, q.processing_in_workspace, {"workspace_id": workspace_id}) or {"n": 0})["n"])


async def touch_source(conn: Conn, *, source_id: str) -> None:
    await execute(conn, q.touch_source, {"id": source_id})


async def get_upload(conn: Conn, *, api_key_id: str, upload_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_upload, {"id": upload_id, "api_key_id": api_key_id})


async def take_upload(conn: Conn, *, api_key_id: str, upload_id: str, now: datetime) -> dict[str, Any] | None:
    return await fetch_one(conn, q.take_upload, {"id": upload_id, "api_key_id": api_key_id, "now": now})


async def drop_old_uploads(conn: Conn, *, now: datetime, ingested_before: datetime, limit: int) -> int:
    """Remove at most `limit` upload slots past use; how many went."""
    return await execute(conn, q.drop_old_uploads, {"now": now, "ingested_before": ingested_before, "limit": limit})


async def texts_after(conn: Conn, *, kind: str, model: str, after: str, limit: int,
                      only: str | None) -> list[dict[str, Any]]:
    """One batch of chunks or rules (`kind`) after an id, with their vector's hash under `model` (None: none)."""
    query = q.chunks_after if kind == "chunk" else q.rules_after
    return await fetch_all(conn, query, {"model": model, "after": after, "limit": limit, "only": only})


async def upsert_vectors(conn: Conn, *, kind: str, model: str, rows: list[dict[str, Any]]) -> None:
    """Store vectors (each {id, api_key_id, hash, vector}) of chunks or rules under `model`."""
    query = q.insert_chunk_embedding if kind == "chunk" else q.insert_rule_embedding
    async with conn.cursor() as cur:
        await cur.executemany(query, [{
            "id": r["id"], "model": model, "api_key_id": r["api_key_id"], "content_hash": r["hash"],
            "embedding": vector_literal(r["vector"])
        } for r in rows])
