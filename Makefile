# partwire — run `make help` for the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help serve test lint typecheck pytest bench wheel clean

help: ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

serve: $(STAMP) ## Start partwire serve on 127.0.0.1:4096 (installs first)
	$(BIN)/partwire serve

test: $(STAMP) lint typecheck pytest ## Format check, lint, mypy --strict, pytest

lint: $(STAMP) ## ruff format --check and ruff check
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench

typecheck: $(STAMP) ## mypy --strict on the package
	$(BIN)/mypy src/partwire

pytest: $(STAMP) ## Run the test suite
	$(BIN)/pytest

bench: $(STAMP) ## Streaming benchmark (long 1000 and long 10000)
	$(BIN)/python bench/stream.py --words 1000 --words 10000

wheel: $(STAMP) ## Build the wheel into dist/
	$(BIN)/pip wheel --no-deps -w dist .

clean: ## Remove the venv and build output
	rm -rf $(VENV) dist build .mypy_cache .ruff_cache .pytest_cache
