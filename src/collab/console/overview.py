"""Page 1, Overview: the workspace, its owner and plan, and its figures over the last 24 hours and 7 days."""

from fastapi import Request

from collab.console.charts import bars
from collab.console.render import render
from collab.console.session import Console, Signed
from collab.kit import usage
from collab.kit.errors import not_found
from collab.workspaces import repository as workspaces

HOUR, DAY = 3600, 86400
# (metric, what the page calls it)
FIGURES = [("api_calls", "API calls"), ("judgments_added", "Judgments added"), ("searches", "Searches"),
           ("extractions", "Extractions"), ("ask_ai", "Ask AI calls"),
           ("webhooks_succeeded", "Webhook deliveries succeeded"), ("webhooks_failed", "Webhook deliveries failed"),
           ("notifications_sent", "Notifications sent")]


def _window(now_ms: int, bucket_s: int, buckets: int) -> tuple[int, int]:
    # Whole buckets ending with the current one, so every bar covers one full hour (day) of the clock.
    bucket_ms = bucket_s * 1000
    until = (now_ms // bucket_ms + 1) * bucket_ms
    return until - buckets * bucket_ms, until


async def _figures(console: Console, *, bucket_s: int, buckets: int) -> dict:
    since, until = _window(console.svc.now_ms(), bucket_s, buckets)
    figures = await usage.overview(console.svc, workspace_id=console.workspace_id, since_ms=since, until_ms=until,
                                   bucket_s=bucket_s)
    # The console's own pages are not API calls of the workspace.
    figures["apiCalls"] = [c for c in figures["apiCalls"] if not c["operation"].startswith("/console")]
    return figures


async def overview_page(request: Request, console: Console = Signed):
    async with console.svc.pool.connection() as conn:
        workspace = await workspaces.get_workspace(conn, workspace_id=console.workspace_id)
    if workspace is None:
        raise not_found("workspace")
    day = await _figures(console, bucket_s=HOUR, buckets=24)
    week = await _figures(console, bucket_s=DAY, buckets=7)
    charts = {
        metric: {
            "day": bars(day["series"][metric], bucket_s=HOUR, name=f"{label}, last 24 hours by hour"),
            "week": bars(week["series"][metric], bucket_s=DAY, name=f"{label}, last 7 days by day")
        }
        for metric, label in FIGURES
    }
    return render(request, console, "overview.html", title="Overview", workspace=workspace, day=day, week=week,
                  figures=FIGURES, charts=charts, keys=await console.api_keys())
