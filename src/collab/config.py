"""Settings: the one place that reads the environment (prefix COLLAB_)."""

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
    # A Redis command taking this long means Redis is gone or frozen; after one, calls fail at once this long.
    redis_timeout_s: float = 2.0
    redis_cooldown_s: float = 1.0
    max_body_bytes: int = 8 * 1024 * 1024

    rate_limit_workspace_create: str = "10/hour"
    rate_limit_workspace_get: str = "60/minute"
    # Every [API-key auth] call counts against its key (fixed one-minute windows in Redis).
    rate_limit_api_key: str = "30000/minute"
    max_workspaces_per_email: int = 5

    worker_poll_delay_s: float = 0.01
    worker_max_jobs: int = 10
    job_sweep_after_s: int = 30
    # How long after its last heartbeat a silent worker still owns its jobs; then they run elsewhere.
    worker_lease_s: float = 20.0

    openai_base_url: str | None = None
    anthropic_base_url: str | None = None
    gemini_base_url: str | None = None
    openai_api_key: str | None = None
    anthropic_api_key: str | None = None
    gemini_api_key: str | None = None
    embedding_model: str | None = None

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

    log_level: str = "INFO"
    log_json: bool = True

    run_workers: int = Field(default=1, ge=1)

    def resolved_secret_key(self) -> str:
        """The secret key; in development one is generated once and kept in the data dir."""
        if self.secret_key:
            return self.secret_key
        if self.env == "production":
            raise RuntimeError("COLLAB_SECRET_KEY is required when COLLAB_ENV=production")
        path = self.data_dir / "secret_key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(secrets.token_urlsafe(48))
            tmp.chmod(0o600)
            tmp.replace(path)
        return path.read_text().strip()


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
