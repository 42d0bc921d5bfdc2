"""Settings: the one place that reads the environment (prefix COLLAB_)."""

import ipaddress
import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob of the service; see DESIGN.md §2 and docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="COLLAB_", extra="ignore")

    env: Literal["development", "production"] = "development"
    data_dir: Path = Path(".data")
    database_url: str | None = None
    redis_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    secret_key: str | None = None
    # The previous secret, kept during a rotation so old tokens and ciphertexts still open.
    secret_key_previous: str | None = None
    # Client IPs are taken from X-Forwarded-For only when the peer is one of these.
    forwarded_allow_ips: str = "127.0.0.1"

    db_pool_min: int = 1
    db_pool_max: int = 10
    # A request waits this long for a database connection, then answers UNAVAILABLE.
    db_pool_timeout_s: float = 5.0
    # Every pooled connection's statement_timeout and idle_in_transaction_session_timeout: a runaway query or an
    # abandoned transaction gives its connection (one of db_pool_max) back instead of starving other tenants. Index
    # builds lift the statement limit for themselves; 0 turns a limit off.
    db_statement_timeout_s: float = Field(default=60.0, ge=0)
    db_idle_in_transaction_timeout_s: float = Field(default=60.0, ge=0)
    # A Redis command taking this long means Redis is gone or frozen; after one, calls fail at once this long.
    redis_timeout_s: float = 2.0
    redis_cooldown_s: float = 1.0
    max_body_bytes: int = 8 * 1024 * 1024

    rate_limit_workspace_create: str = "10/hour"
    rate_limit_workspace_get: str = "60/minute"
    # Every [API-key auth] call counts against its key (fixed one-minute windows in Redis).
    rate_limit_api_key: str = "30000/minute"
    max_workspaces_per_email: int = 5

    # The bulk lane's fallback poll: every lane is woken by a push when a job is queued, so polling only finds
    # deferred jobs (retries) and fires the crons, and a 10 ms poll cost an idle worker ~8% of a core.
    worker_poll_delay_s: float = Field(default=0.25, gt=0)
    worker_max_jobs: int = 10
    job_sweep_after_s: int = 30
    # How long after its last heartbeat a silent worker still owns its jobs; then they run elsewhere.
    worker_lease_s: float = 20.0

    # Fairness (issue #14 item 6, #15 item 1). Search, Ask AI and extraction each have their own queue and slots
    # per worker process (bulk work and the crons use `worker_max_jobs`); like bulk, they are woken by a push, so
    # their poll delay is only the fallback for jobs nobody announced (retries).
    worker_search_max_jobs: int = Field(default=10, ge=1)
    worker_ai_max_jobs: int = Field(default=10, ge=1)
    worker_extraction_max_jobs: int = Field(default=4, ge=1)
    worker_lane_poll_delay_s: float = Field(default=0.25, gt=0)
    # Extraction per workspace: runs in flight and starts per window (429 RESOURCE_EXHAUSTED past either).
    extraction_max_concurrency_per_workspace: int = Field(default=2, ge=1)
    rate_limit_extraction: str = "30/hour"
    # Model calls and tokens per workspace per UTC day on the platform's own provider keys (not a workspace's
    # own key); 0 = no quota. Past it: RESOURCE_EXHAUSTED until the next UTC day.
    platform_key_daily_calls: int = Field(default=0, ge=0)
    platform_key_daily_tokens: int = Field(default=0, ge=0)
    # Uploaded knowledge-source bytes are dropped this many days after upload (the row and its result stay);
    # 0 = kept forever.
    knowledge_source_retention_days: int = Field(default=0, ge=0)

    openai_base_url: str | None = None
    anthropic_base_url: str | None = None
    gemini_base_url: str | None = None
    openai_api_key: str | None = None
    anthropic_api_key: str | None = None
    gemini_api_key: str | None = None
    embedding_model: str | None = None
    # Where ONNX exports of embedding models are cached (keyed by the weights' hash); unset: <data_dir>/models.
    model_cache_dir: Path | None = None

    # Ask AI: the whole job's budget, one model call's share of it, retries, per-workspace limits.
    ask_ai_timeout_s: float = 60.0
    llm_call_timeout_s: float = 55.0
    llm_attempts: int = 3
    llm_retry_backoff_s: float = 1.0
    rate_limit_ai: str = "120/minute"
    ai_max_concurrency: int = 8

    # Extraction: the job's budget, the default provider, how a large checklist is split into calls.
    extraction_timeout_s: float = 120.0
    extraction_default_provider: str = "openai"
    extraction_chunk_chars: int = 20_000
    extraction_chunk_tasks: int = 250
    extraction_concurrency: int = 4
    prompts_dir: str | None = None

    # Judgment search: the query-embedding job's budget, and up to how many rows a scope is searched
    # exactly (btree-selected scan, recall 1.0) rather than through HNSW.
    search_timeout_s: float = 10.0
    search_exact_threshold: int = 20_000
    search_ef_search_max: int = 1000
    # Hybrid search: reciprocal rank fusion of the vector and the full-text rankings (score = weight / (k + rank)
    # per ranking); a lexical weight of 0 searches by vector only. `similarity` stays the vector's cosine.
    search_vector_weight: float = 1.0
    search_lexical_weight: float = 1.0
    search_rrf_k: int = 60
    # Full-text candidates ranked per search at most (the first matches found, unordered): a common word in a
    # huge tenant stays a bounded amount of ranking work.
    search_lexical_candidates: int = Field(default=1000, ge=1)
    # How long a worker trusts its idea of the active embedding model before asking Postgres again.
    embedding_refresh_s: float = 5.0

    # Presence: a user not updated for this long reads `away`, and then `offline` (seconds).
    presence_away_s: float = 300
    presence_offline_s: float = 600

    # Advanced webhooks: private, loopback and link-local targets are refused unless this is on (self-hosting,
    # tests); the time one delivery attempt may take; how many endpoints an API key may register.
    webhooks_allow_private_targets: bool = False
    webhooks_timeout_s: float = 15.0
    webhooks_max_endpoints: int = 50

    # Bounded reads: a list page (activities, notifications, CRDT editors) stops before its records pass this
    # many bytes of JSON (always at least one record; the page token goes on from there); a CRDT editor's
    # stored Yjs state and the number of editors of one document are capped on write.
    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    crdt_max_state_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    crdt_max_editors_per_document: int = Field(default=1000, ge=1)

    # Realtime (WebSocket rooms, docs/realtime.md). Limits per connection: the largest message (4413 past it) and
    # updates per second (bursts of twice that; 4429 past it); per API process: connections to one document and
    # to one API key (4429). Upkeep runs every heartbeat: a socket that heard nothing for a heartbeat gets a
    # keepalive (y-websocket clients reconnect after 30 s of silence, hence at most 20 s); one that sent nothing for
    # the idle timeout is closed
    # (4408); a user whose sockets sent no edit or awareness change for `realtime_away_after_s` reads `away`;
    # access is checked again every `realtime_access_recheck_s` (4403 when it went away). A client that lets
    # `realtime_send_queue` messages pile up is closed (1013). Updates appended over sockets are folded into the
    # editor's state after `realtime_compact_every` of them, when a room empties, and by the worker's sweep for
    # those older than `realtime_compact_after_s`.
    realtime_max_message_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    # A socket's update is tried on the room's copy of the document before it is stored; a Yjs update of more structs
    # than this is refused first (4400), so checking one takes at most ~0.1 s of a thread.
    realtime_max_update_structs: int = Field(default=100_000, ge=100)
    realtime_updates_per_s: float = Field(default=50.0, gt=0)
    # Open sockets one API process accepts (4429 past any): to one document, of one user (of one API key), of one API
    # key, of one workspace, and in all (never more than the process's file descriptor limit less 256).
    realtime_max_connections_per_document: int = Field(default=250, ge=1)
    realtime_max_connections_per_user: int = Field(default=50, ge=1)
    realtime_max_connections_per_tenant: int = Field(default=2000, ge=1)
    realtime_max_connections_per_workspace: int = Field(default=4000, ge=1)
    realtime_max_connections: int = Field(default=10_000, ge=1)
    realtime_heartbeat_s: float = Field(default=5.0, gt=0, le=20)
    realtime_idle_timeout_s: float = Field(default=120.0, gt=0)
    realtime_away_after_s: float = Field(default=60.0, gt=0)
    realtime_access_recheck_s: float = Field(default=5.0, gt=0)
    realtime_send_queue: int = Field(default=512, ge=1)
    # ...or that many bytes (more than the largest document, whose sync step 2 is one message).
    realtime_send_queue_bytes: int = Field(default=24 * 1024 * 1024, ge=64 * 1024)
    # Live state topics one socket may subscribe to (4429 past it).
    realtime_subscriptions_per_socket: int = Field(default=50, ge=1)
    realtime_compact_every: int = Field(default=200, ge=1)
    realtime_compact_after_s: float = Field(default=60.0, ge=0)
    # Awareness (cursors, selections, who is here) is kept in memory per editor room and relayed to every socket:
    # one socket speaks for at most `realtime_awareness_clients` client ids (a y-websocket client has one), a state
    # carries at most `realtime_awareness_state_bytes`, and an editor room holds at most
    # `realtime_awareness_room_bytes` of states (the most a query-awareness answer or a newcomer's first message is).
    # Live state values one document keeps (livestate/broadcast); in bytes they are capped so that livestate/get's
    # answer of all of them stays within max_response_bytes.
    realtime_live_states_per_document: int = Field(default=100, ge=1, le=10000)
    realtime_awareness_clients: int = Field(default=4, ge=1, le=64)
    realtime_awareness_state_bytes: int = Field(default=16 * 1024, ge=256)
    realtime_awareness_room_bytes: int = Field(default=1024 * 1024, ge=4096)

    # Comments (commentannotations/*): how many comments one thread may hold; an add past it is INVALID_ARGUMENT.
    comments_max_per_thread: int = Field(default=1000, ge=1)
    # JSON bytes one thread may hold (its fields, comments and their reactions, as stored); an add or edit that would
    # pass it is INVALID_ARGUMENT. Below max_response_bytes, so a full thread comes whole in one page.
    comments_max_thread_bytes: int = Field(default=2 * 1024 * 1024, ge=64 * 1024)
    # Threads one count/get may count; a call whose documents (or organization, without documentIds) hold more is
    # INVALID_ARGUMENT on documentIds, so a count never scans an organization's every thread.
    comments_count_max_threads: int = Field(default=10_000, ge=1)

    # Failed authentication (auth): failures counted per source address and per presented API key or workspace
    # id, fixed windows in Redis; past either, 429 RESOURCE_EXHAUSTED before any database work (credentials that
    # authenticated recently still pass). Fails open while Redis is down.
    auth_failures_per_address: str = "60/minute"
    auth_failures_per_key: str = "100/minute"
    # How long a process reuses its verification of API-key credentials (no database, MAC or Redis round trip)
    # while subscribed to their changes; a token reset or key rotation ends it at once everywhere. 0: off.
    auth_cache_ttl_s: float = Field(default=10.0, ge=0)

    # The console (/console): a signed-in session ends after this many seconds without a request (sliding).
    console_idle_timeout_s: int = Field(default=1800, ge=60)
    # However active, a console session ends this long after its sign-in.
    console_session_max_s: int = Field(default=12 * 3600, ge=300)

    # Usage counters (the console's Overview, kit/usage.py): each process adds its per-minute counts to Postgres
    # this often (a crash loses at most this long of counts); rows older than the retention are deleted hourly.
    usage_flush_s: float = Field(default=10.0, gt=0)
    usage_retention_days: int = Field(default=8, ge=1)

    log_level: str = "INFO"
    log_json: bool = True

    run_workers: int = Field(default=1, ge=1)

    # Serving on every core (`collab api --workers`): API processes sharing one port; unset: one per core.
    api_workers: int | None = Field(default=None, ge=1)

    @property
    def models_dir(self) -> Path:
        """The cache of exported embedding models."""
        return self.model_cache_dir or self.data_dir / "models"

    def resolved_secret_key(self) -> str:
        """The secret key; in development one is generated once and kept in the data dir."""
        if self.secret_key:
            if self.env == "production" and len(self.secret_key.encode()) < MIN_SECRET_BYTES:
                raise RuntimeError(
                    f"COLLAB_SECRET_KEY is {len(self.secret_key.encode())} bytes; production needs at least "
                    f"{MIN_SECRET_BYTES} (e.g. python -c 'import secrets; print(secrets.token_urlsafe(48))')"
                )
            return self.secret_key
        if self.env == "production":
            raise RuntimeError("COLLAB_SECRET_KEY is required when COLLAB_ENV=production")
        path = self.data_dir / "secret_key"
        if not path.exists():
            _create_secret_file(path)
        return path.read_text().strip()


# Secrets: production refuses a shorter COLLAB_SECRET_KEY (it keys every hash, cipher and signing key).
MIN_SECRET_BYTES = 32


def _create_secret_file(path: Path) -> None:
    """Write a fresh secret to `path`: never readable by others, never half-written, never overwriting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    # Created 0600 in one call (no window where another user can read it), filled, then linked into place:
    # os.link fails when another process won the race, and then its secret is the one kept.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(secrets.token_urlsafe(48))
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: rename, which is atomic but may overwrite
            if not path.exists():
                os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def require_safe_secret(settings: Settings, *, host: str) -> None:
    """Refuse to serve off loopback with a secret nobody configured (each replica would invent its own)."""
    settings.resolved_secret_key()  # production: present and long enough
    if settings.env == "development" and not settings.secret_key and not _is_loopback(host):
        raise RuntimeError(
            f"Listening on {host} in development mode without COLLAB_SECRET_KEY: set COLLAB_SECRET_KEY "
            "(and COLLAB_ENV=production), or listen on 127.0.0.1"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
