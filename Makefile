# partwire — run `make help` for the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve

.PHONY: help serve test system sdk clients ui js lint typecheck pytest reliability bench wheel clean

help: ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# What serving needs (the package alone); the test and bench targets add the [dev] extra.
$(SERVE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(SERVE_STAMP)

$(STAMP): $(SERVE_STAMP)
	$(BIN)/pip install --quiet --no-binary claude-agent-sdk -e '.[dev]'
	touch $(STAMP)

serve: $(SERVE_STAMP) ui ## Start partwire serve on 127.0.0.1:4096, or PORT=… (installs and builds the web UI first)
	$(BIN)/partwire serve $(if $(PORT),--port $(PORT))

test: $(STAMP) system sdk clients ui js lint typecheck pytest ## System packages, SDK, protocol clients, web UI build + tsc, the JS client's build and tests, format check, lint, mypy --strict, pytest

# The web UI: npm dependencies and a Vite build into the package (served at /, shipped in the wheel).
UI_OUT := src/partwire/server/static/index.html
UI_SOURCES := $(wildcard web/src/*) web/index.html web/vite.config.ts web/tsconfig.json \
  $(wildcard clients/js/src/*.ts)

# npm install, not npm ci: the lock holds only the platform builds of rollup this
# registry serves, which npm ci refuses; install still takes the locked versions.
web/node_modules/.installed: web/package-lock.json
	cd web && npm install --no-audit --no-fund --loglevel=error
	touch $@

$(UI_OUT): web/node_modules/.installed $(UI_SOURCES)
	cd web && npx --no-install tsc --noEmit && npx --no-install vite build --logLevel warn

ui: $(UI_OUT) ## Install the web UI's npm dependencies, type-check it and build it into the package

SDK_STAMP := tests/sdk/node_modules/.installed

$(SDK_STAMP): tests/sdk/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  cd tests/sdk && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: the opencode SDK test is skipped"; fi

sdk: $(SDK_STAMP) ## Install the official opencode JS SDK for its conformance test (npm)

CLIENTS_STAMP := tests/protocol/node/node_modules/.installed

$(CLIENTS_STAMP): tests/protocol/node/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  cd tests/protocol/node && npm ci --no-audit --no-fund --loglevel=error \
	    && touch node_modules/.installed; \
	else echo "npm not found: the protocol client tests are skipped"; fi

clients: $(CLIENTS_STAMP) ## Install the protocols' own npm clients the tests run (ai, @ai-sdk/react, @ag-ui/client, the ACP SDK)

JS_STAMP := clients/js/dist/.built
JS_SOURCES := $(wildcard clients/js/src/*.ts clients/js/test/*.ts clients/js/scripts/*.ts) \
  clients/js/package-lock.json clients/js/tsconfig.json

$(JS_STAMP): $(JS_SOURCES)
	@if command -v npm >/dev/null 2>&1; then \
	  cd clients/js && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build \
	    && touch dist/.built; \
	else echo "npm not found: the JS client is not built and its hub tests are skipped"; fi

js: $(JS_STAMP) ## Build clients/js (the TypeScript SessionEvent reducer) and run its tests
	@if [ -f $(JS_STAMP) ]; then cd clients/js && \
	  out=$$(npm test --silent 2>&1) || { echo "$$out"; exit 1; }; echo "$$out" | grep -E '^# (pass|fail)'; fi

system: ## Install the system packages tests use (ripgrep, git, chromium, postgresql, redis-server, nginx, curl) when apt-get is available as root
	@missing=""; for tool in rg:ripgrep git:git chromium:chromium redis-server:redis-server curl:curl; do \
	  command -v $${tool%%:*} >/dev/null 2>&1 || missing="$$missing $${tool##*:}"; done; \
	ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq >/dev/null 2>&1; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 \
	    || for pkg in $$missing; do DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg \
	      >/dev/null 2>&1 || echo "could not install $$pkg; the tests that need it are skipped"; done; \
	else echo "not installed:$$missing (needs root and apt-get); the tests that need them are skipped"; fi

lint: $(STAMP) ## ruff format --check and ruff check
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/ruff check src tests bench examples

typecheck: $(STAMP) ## mypy --strict on the package
	$(BIN)/mypy src/partwire

# a test file to each worker: the files' module-scoped servers and benches stay whole
PYTEST_WORKERS ?= 2

pytest: $(STAMP) ## Run the test suite (PYTEST_WORKERS=0 runs it in one process)
	$(BIN)/pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

# The crash and resume suite at length (make test runs it short: 2 iterations per scenario).
RELIABILITY_ITERATIONS ?= 13
RELIABILITY_STORM_WORDS ?= 3000
reliability: $(STAMP) ## kill -9 / resume suite, long run (RELIABILITY_ITERATIONS per scenario; PARTWIRE_RELIABILITY_SEED to replay)
	PARTWIRE_RELIABILITY_ITERATIONS=$(RELIABILITY_ITERATIONS) \
	PARTWIRE_RELIABILITY_STORM_WORDS=$(RELIABILITY_STORM_WORDS) \
	  $(BIN)/pytest -s tests/reliability

bench: $(STAMP) ui ## Benchmarks: demo streaming (burst and paced), a mock provider, capacity, the paced floor, the log's SQLite cost, a client write's cost, pruning the log, the web UI in headless Chromium, replay memory
	$(BIN)/python bench/stream.py --words 1000 --words 10000
	$(BIN)/python bench/stream.py --words 1000 --delay-ms 5
	$(BIN)/python bench/provider.py --words 10000
	$(BIN)/python bench/capacity.py
	$(BIN)/python bench/floor.py
	$(BIN)/python bench/log_append.py
	$(BIN)/python bench/client_write.py
	$(BIN)/python bench/log_prune.py
	$(BIN)/python bench/start.py
	$(BIN)/python bench/mentions.py
	$(BIN)/python bench/ui.py --messages 2000 --words 10000
	$(BIN)/python bench/replay.py --events 90000
	$(BIN)/python bench/replay.py --events 90000 --transport all
	$(BIN)/python bench/ingest.py --deltas 10000
	$(BIN)/python bench/ingest.py --deltas 500 --paced-ms 5
	$(BIN)/python bench/ingest.py --deltas 2000 --delta-chars 2048 --prefix-kb 20 20480 --args-deltas 100 1000
	$(BIN)/python bench/recorder.py
	$(BIN)/python bench/timetravel.py

wheel: $(STAMP) ui ## Build the wheel into dist/ (it carries the built web UI)
	$(BIN)/pip wheel --no-deps -w dist .

clean: ## Remove the venv and build output
	rm -rf $(VENV) dist build .mypy_cache .ruff_cache .pytest_cache tests/sdk/node_modules \
	  tests/protocol/node/node_modules \
	  web/node_modules src/partwire/server/static
