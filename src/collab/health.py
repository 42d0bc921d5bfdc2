"""Liveness and readiness probes."""

import asyncio
import json
from typing import Any

import httpx
from fastapi import APIRouter, Depends

from collab.kit import drain
from collab.kit.db.migrate import current_version, latest_version
from collab.kit.envelope import OrjsonResponse
from collab.kit.services import Services, services

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
async def healthz():
    return OrjsonResponse({"status": "ok"})


async def _postgres(svc: Services) -> str:
    async with svc.pool.connection(timeout=2) as conn:
        version = await current_version(conn)
    return "ok" if version >= latest_version() else f"migrations behind ({version} < {latest_version()})"


async def _redis(svc: Services) -> str:
    if svc.redis is None:
        return "not configured"
    await svc.redis.ping()
    return "ok"


@router.get(
    "/readyz", summary="Postgres, Redis and migrations are ready, and the process is not draining; `loop` is "
    "the process's event-loop lag: `lagMs` now, `maxLagMs` over the last minute, `stalls` counted since start; "
    "`localModel`, with COLLAB_LOCAL_MODEL, names the embedded model and whether it answers; `embedding` lists the "
    "embedding models the workers hold, each with its runtime and the device its batches run on (cpu, cuda-onnx, "
    "cuda-torch)")
async def readyz(svc: Services = Depends(services)):
    if drain.draining():  # stopping: the load balancer takes this process out while it still serves
        return _not_ready({"drain": "draining"})
    checks = {}
    for name, probe in (("postgres", _postgres), ("redis", _redis)):
        try:
            checks[name] = await asyncio.wait_for(probe(svc), timeout=3)
        except Exception as exc:  # any failure means not ready; say which
            checks[name] = f"error: {type(exc).__name__}"
    loop = svc.loop_lag.snapshot() if svc.loop_lag is not None else None
    if all(v == "ok" for v in checks.values()):
        body: dict[str, Any] = {"status": "ready", "checks": checks, "loop": loop}
        if svc.settings.local_model:  # named, never a reason to take the API out: the model is optional
            body["localModel"] = await _local_model(svc.settings)
        body["embedding"] = await _embedders(svc)
        return OrjsonResponse(body)
    return _not_ready(checks, loop)


async def _embedders(svc: Services) -> list[dict]:
    """The embedding models the workers hold: each with its runtime (onnx-fp32, openvino-bf16, torch), where its
    batches run (cpu, cuda-onnx, cuda-torch), the worker and when it loaded it (epoch seconds); informational."""
    from collab.judgments.tasks import EMBEDDERS_KEY

    async def read() -> dict:
        return await svc.redis.hgetall(EMBEDDERS_KEY) if svc.redis else {}  # type: ignore[misc]

    try:
        found = await asyncio.wait_for(read(), timeout=1)
        return sorted((json.loads(v) for v in found.values()), key=lambda d: (d.get("worker", ""), d["model"]))
    except Exception:  # never a reason to report the API unready
        return []


async def _local_model(settings) -> dict[str, str]:
    """The embedded model of COLLAB_LOCAL_MODEL: its name, where it answers, and whether it does (its /health)."""
    url = (settings.openai_compatible_base_url or "").removesuffix("/v1")
    state = "not started"
    if url:
        try:
            async with httpx.AsyncClient(timeout=2) as client:
                answer = await client.get(f"{url}/health")
            state = "ok" if answer.status_code == 200 else f"error: HTTP {answer.status_code}"
        except httpx.HTTPError as exc:
            state = f"error: {type(exc).__name__}"
    return {"model": settings.local_model, "url": url, "state": state}


def _not_ready(checks: dict[str, str], loop: dict | None = None) -> OrjsonResponse:
    """503 in the envelope; `loop`: the process's event-loop lag (kit/looplag.py), reported while not ready too."""
    details = {"checks": checks} if loop is None else {"checks": checks, "loop": loop}
    body = {"error": {"status": "UNAVAILABLE", "message": "Not ready.", "details": details}}
    return OrjsonResponse(body, status_code=503)
