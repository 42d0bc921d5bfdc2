"""The settings of the session's service, on its servers: what `live` runs with, and a base for tests' own."""

from collab.config import Settings


def make_settings(servers, fake=None, **overrides) -> Settings:
    values = dict(
        database_url=servers["database_url"],
        redis_url=servers["redis_url"],
        data_dir=servers["root"],
        secret_key="test-secret-key-0123456789-abcdefghij",
        log_json=False,
        rate_limit_workspace_create="10/hour",
        rate_limit_workspace_get="60/minute",
        llm_retry_backoff_s=0.01,
        llm_call_timeout_s=1.5,
        ask_ai_timeout_s=10,
        embedding_refresh_s=0,
        # The worker loads the embedding model when a job first needs it, not at start-up: tests that never embed
        # (most) never load it; those that do ask for the `embedding_model` fixture.
        embedding_preload=False,
        # The fast model (the session registers it first, so keys follow it): a deployment's default, the accurate
        # one, costs ~6x per text; its own tests choose it per key (tests/judgments/test_models.py).
        embedding_model="all-MiniLM-L6-v2",
        # The webhook receiver of the tests listens on 127.0.0.1; SSRF tests switch this off themselves.
        webhooks_allow_private_targets=True,
        agent_execution_allow_private_pages=True,  # the agents tests' page server too
        # The tests' SMTP servers (aiosmtpd) listen on 127.0.0.1.
        email_allow_private_hosts=True,
        # The fake Ollama and OpenAI-compatible servers too (a workspace's own model server); SSRF tests switch it off.
        models_allow_private_base_urls=True,
        # A loaded machine (CI beside other work) can leave the service's loop unscheduled for seconds: a Redis reply
        # read late then is not Redis gone (the production default of 2 s is for a server that froze).
        redis_timeout_s=10,
        # A stopped API process stops at once (no load balancer to drain from); the drain's own tests set it.
        drain_s=0)
    if fake is not None:
        for provider in ("openai", "anthropic", "gemini"):
            values[f"{provider}_base_url"] = fake.base_url(provider)
    values.update(overrides)
    return Settings(**values)
