"""The noisy-neighbour harness's tables: every declared job's fairness case, every lane's bound, the floods.

A job's case says which lane it takes and what bounds one workspace's share of that lane's slots (`share`, read
from the settings, and the `bucket` the share is counted in: jobs that count in one bucket share one limit). A lane
serving interactive calls (search, ai, extraction) must be shared: the shares of its buckets add up to at most
half its slots, so two tenants at their limits still leave room for a third. The bulk lane serves no interactive
call; its jobs say why their unit of work is bounded instead. `FLOODS` says how tenant A fills each lane with its
most expensive work, held open by peers that never answer (the fake providers hold A's key; a black hole takes
A's pages, webhooks, e-mail and permission provider). tests/fairness/test_noisy_neighbour.py reads all three: a
job or lane missing here fails there.
"""

import base64
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable

from collab.config import Settings

INTERACTIVE_LANES = ("search", "ai", "extraction")


def _ai(s: Settings) -> int:
    return s.ai_max_concurrency


def _extract(s: Settings) -> int:
    return s.extraction_max_concurrency_per_workspace


def _search(s: Settings) -> int:
    return s.search_max_concurrency_per_workspace


@dataclass(frozen=True)
class Case:
    """What bounds one workspace's use of a job's lane."""

    lane: str
    guard: str  # one line: how a workspace's share of the lane is held to its limit, or why no share is needed
    share: Callable[[Settings], int] | None = None  # the most jobs of this bucket one workspace has in flight
    bucket: str | None = None  # jobs counted in one bucket share one limit


_AI_SHARE = "counted in the workspace's ai concurrency (kit/ratelimit.workload on ai:{workspace})"
CASES: dict[str, Case] = {
    "ask_ai": Case("ai", _AI_SHARE, _ai, "ai"),
    "agent_prompt_tool": Case("ai", _AI_SHARE, _ai, "ai"),
    "ask_memory": Case("ai", _AI_SHARE, _ai, "ai"),
    "suggest_decision": Case("ai", _AI_SHARE, _ai, "ai"),
    "run_agent_execution": Case(
        "ai", "takes a slot of the workspace's ai concurrency when it starts and waits off the lane when none is "
        "free (agents/tasks.py)", _ai, "ai"),
    "extract_agents": Case("extraction", "counted in the workspace's extraction concurrency (extract:{workspace})",
                           _extract, "extract"),
    "ingest_knowledge": Case(
        "extraction", "takes a slot of the workspace's extraction concurrency when it runs, deferred when none is "
        "free (knowledge/tasks.py)", _extract, "extract"),
    "update_knowledge": Case("extraction", "counted in the workspace's extraction concurrency", _extract, "extract"),
    "search_judgments": Case("search", "counted in the workspace's search concurrency (search:{workspace})", _search,
                             "search"),
    "embed_query": Case(
        "search", "only inside a search or an ask that holds its workspace's share (no route "
        "enqueues it alone)", _search, "search"),
    "search_knowledge": Case("search", "counted in the workspace's search concurrency", _search, "search"),
    "ping": Case("search", "a probe of the benchmarks and drills: no route enqueues it", lambda s: 0, "probe"),
    # The bulk lane: background work no interactive call waits for; each unit is bounded by its timeout.
    "echo": Case("bulk", "a probe of the benchmarks and drills: no route enqueues it"),
    "echo_tracked": Case("bulk", "a probe of the tests and drills: no route enqueues it"),
    "backfill_judgments": Case("bulk", "one call in flight per workspace (backfill:{workspace}), a batch per call"),
    "derive_judgments": Case("bulk", "one batch of activities per job, bounded by the activities/add body"),
    "reembed_range": Case(
        "bulk", "one range of at most --range-size judgments per job; a key's own model switch works one range at "
        "a time (one bulk slot), one switch per key (tests/judgments/test_models.py)"),
    "reembed_finish": Case("bulk", "once per re-embed, after its last range: the scope's knowledge texts in batches"),
    "deliver_webhook": Case(
        "bulk", "one delivery per job within COLLAB_WEBHOOKS_TIMEOUT_S; a failing endpoint is "
        "turned off"),
    "send_notification_email": Case(
        "bulk", "one batch of one user's e-mails per job within COLLAB_EMAIL_TIMEOUT_S, "
        "capped per key per day"),
    "send_notification_slack": Case(
        "bulk", "one batch of one user's notifications per job, one post within COLLAB_SLACK_TIMEOUT_S, "
        "capped per key per day"),
    "send_login_link": Case(
        "bulk", "one e-mail per job within COLLAB_EMAIL_TIMEOUT_S, three tries; queued only within "
        "COLLAB_RATE_LIMIT_LOGIN_LINK per address"),
    "compute_insights": Case("bulk", "one key at most once a minute, its newest judgments only, computed off the "
                             "loop"),
    "migrate_document": Case("bulk", "one document per job, in bounded batches"),
    "delete_user_data": Case("bulk", "one user per job, in bounded batches"),
}

# How long tenant B's interactive call on a lane may take while tenant A floods any lane ("api": answered by the
# API process alone). B alone: well under a second each, so a loaded machine stays far inside; a B that waits for
# A's slots waits for A's held calls to give up (15 s and more: the held model calls, the 30 s peers), past them.
LANE_BOUNDS_S = {"api": 5.0, "search": 8.0, "ai": 10.0, "extraction": 12.0, "bulk": 10.0}


class BlackHole:
    """A TCP peer on 127.0.0.1 that accepts every connection and never answers (a page, webhook endpoint, SMTP
    server or permission provider that hangs)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        # shutdown() wakes the accepting thread (close() alone leaves it blocked in accept(), where it would still
        # take a connection made afterwards, and hold it unanswered after the close); join it, then close them all.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(timeout=5)
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def csv_checklist() -> str:
    """A three-line checklist for agents/extract, base64."""
    return base64.b64encode(
        b"Category,Check\nClaims,Every price claim states tax\nPrivacy,Forms link the policy\n").decode()


def knowledge_file(i: int) -> dict[str, Any]:
    """An inline knowledge source whose rules go to the model (prose with directives)."""
    text = f"# Style guide {i}\n\nAlways state whether prices include tax.\nNever promise delivery dates.\n".encode()
    return {
        "source": "inline", "file": {
            "base64": base64.b64encode(text).decode(), "mimeType": "text/markdown", "fileName": f"guide-{i}.md",
            "fileSize": len(text)
        }
    }
