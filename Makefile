# Two commands for a new user: `make run` and `make test`. Everything they need is installed from here.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# The PostgreSQL the backend tests run on (pytest-django creates and drops test_<name>).
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/harness
# The Redis the cluster tests' workers share (database 15, apart from a default one).
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15

.PHONY: setup browser clients migrate examples run serve-fast serve-cluster test lint format screenshots bench clean

# The editable install carries the activation .pth (build_backend/harness_backend.py): reinstalled when either changes.
$(BIN)/.installed: pyproject.toml build_backend/harness_backend.py harnessweb-activate.pth
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,fast]"
	touch $@

setup: $(BIN)/.installed

# The browser tests drive Debian's Chromium (never a browser download).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }

# Client libraries that cannot live beside the project's pinned SDKs each get a virtualenv of their own,
# .venv/<name>, with the SDK versions they resolve to (tests/clients/<name>/requirements.txt); their tests run
# tests/clients/<name>/check.py there. instructor pins a jiter the project's openai cannot use
# (tests/test_clients_instructor.py); mirascope wants openai<3 and anthropic<1, magentic an anthropic before 1.0
# (tests/test_clients_structured.py).
SIDE_CLIENTS := instructor mirascope magentic
$(VENV)/%/.installed: tests/clients/%/requirements.txt
	test -x $(VENV)/$*/bin/python || $(PYTHON) -m venv $(VENV)/$*
	$(VENV)/$*/bin/python -m pip install --quiet -r $<
	touch $@

# The node clients tests/test_clients_node.py runs (tests/clients/package-lock.json), when node is on the machine;
# and the side clients' virtualenvs.
clients: $(SIDE_CLIENTS:%=$(VENV)/%/.installed)
	@if ! command -v node >/dev/null 2>&1; then \
		echo "node is not installed: the node client tests (tests/test_clients_node.py) are not collected"; \
	elif [ ! tests/clients/node_modules/.package-lock.json -nt tests/clients/package-lock.json ]; then \
		npm ci --prefix tests/clients --no-audit --no-fund --loglevel=error; \
	fi

migrate: setup
	$(BIN)/python manage.py migrate --noinput

examples: migrate
	$(BIN)/python manage.py load_scenarios scenarios_app/examples
	$(BIN)/python manage.py load_prices --missing-only harnessweb/engine/prices.json

run: examples
	@$(BIN)/python manage.py login_link --base-url http://$(HOST):$(PORT)
	@echo "Serving on http://$(HOST):$(PORT)/ (OpenAI: http://$(HOST):$(PORT)/v1, Anthropic: http://$(HOST):$(PORT))"
	$(BIN)/python -m harnessweb.serve -b $(HOST) -p $(PORT) harnessweb.asgi:application

# The same ASGI application (WebSockets included) under uvicorn with uvloop and httptools, for load.
serve-fast: examples
	$(BIN)/uvicorn --host $(HOST) --port $(PORT) --loop uvloop --http httptools --no-access-log \
		harnessweb.asgi:application

# WORKERS uvicorn workers on one port, sharing PostgreSQL (DATABASE_URL) and Redis (REDIS_URL): both are checked
# first, and migrations run once, here, not in each worker. On several hosts: the same two URLs on each, any load
# balancer in front.
WORKERS ?= 2
serve-cluster: setup
	@$(BIN)/python manage.py check_cluster
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_scenarios scenarios_app/examples
	$(BIN)/uvicorn --host $(HOST) --port $(PORT) --workers $(WORKERS) --loop uvloop --http httptools \
		--no-access-log harnessweb.asgi:application

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint browser clients
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest -q -m "not cluster"
	DATABASE_URL=$(PG_TEST_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/pytest -q -m "backends or cluster" -p no:cacheprovider

# Refresh the screenshots in docs/ (the browser tests take them).
screenshots: setup browser
	HARNESS_SCREENSHOT_DIR=$(CURDIR)/docs $(BIN)/pytest -q tests/test_live_browser.py tests/test_browser_scenarios.py tests/test_overview_browser.py tests/test_browser_diff.py \
		tests/test_runs_list_browser.py

bench: examples
	$(BIN)/python tests/benchmarks/load.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .test-db-* tests/clients/node_modules
