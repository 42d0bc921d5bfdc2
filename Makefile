# The two commands of the README: `make run` and `make test`. Both install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test-clients run test fuzz bench bench-crud bench-realtime load clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

# Real clients the tests drive: yjs + y-websocket under Node, Playwright over Debian's Chromium.
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

# The API serves on every core by default; API_WORKERS=N sets how many processes.
run: install
	$(BIN)/collab run $(if $(API_WORKERS),--workers $(API_WORKERS))

test: install test-clients
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Schema fuzzing at a large budget (make test runs the same cases at 10 per operation and mode).
fuzz: install
	COLLAB_FUZZ_EXAMPLES=$${COLLAB_FUZZ_EXAMPLES:-200} $(BIN)/python -m pytest tests/api/test_fuzz_schema.py $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench

# Per-request overhead: a bare FastAPI route vs small reads and writes, 1 and 2 API processes (needs wrk).
bench-crud: install
	$(BIN)/python -m bench.crud --workers 1,2 $(CRUD_ARGS)

# Realtime: 200 clients in one room, 1,000 rooms x 2, connections held, REST write reach (REALTIME_ARGS for sizes).
bench-realtime: install
	$(BIN)/python -m bench.realtime --write $(REALTIME_ARGS)

# The load mix against a fresh `collab run` for 10 minutes (LOAD_ARGS="--duration 60" for a quick look).
load: install
	$(BIN)/python -m bench.load --duration 600 $(LOAD_ARGS)

clean:
	rm -rf $(VENV) .data
