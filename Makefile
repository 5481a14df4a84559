# Two commands for a new user: `make run` and `make test`. Everything they need is installed from here, at the exact
# versions of constraints.txt (pyproject.toml declares ranges, as a library in a team's virtualenv must).
#
# The newest of Python 3.13, 3.12 and 3.11 that runs here (a pyenv shim of a version that is not active does not
# run), else python3; PYTHON=... chooses another. The virtualenv's rule checks it is 3.11 or newer.
PYTHON ?= $(or $(firstword $(foreach v,3.13 3.12 3.11,$(shell python$(v) -c "" >/dev/null 2>&1 && echo python$(v)))),python3)
VENV := .venv
BIN := $(VENV)/bin
# Every install at constraints.txt's versions; --no-compile: modules are compiled as they are first imported, not all
# at install time (half of pip's time for the server alone).
PIP_INSTALL = -m pip install --quiet --no-compile -c constraints.txt
HOST ?= 127.0.0.1
PORT ?= 8000
# The PostgreSQL the backend tests run on (pytest-django creates and drops test_<name>).
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/harness
# The Redis the cluster tests' workers share (database 15, apart from a default one).
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15

.PHONY: setup server-setup core-venvs core-test browser clients migrate examples login run serve-fast serve-cluster docs test lint format screenshots bench clean

# The editable install carries the activation .pth (build_backend/harness_backend.py): reinstalled when either changes.
INSTALL_INPUTS := pyproject.toml constraints.txt build_backend/harness_backend.py harnessweb-activate.pth
$(VENV)/pyvenv.cfg:
	@$(PYTHON) -c "import sys; sys.exit(sys.version_info < (3, 11))" 2>/dev/null || { \
		echo "harnessweb needs Python 3.11, 3.12 or 3.13, and '$(PYTHON)' is not one: install one of them, or name it:" \
		"make PYTHON=/path/to/python3.12 ..." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# make run: the server alone (the core and the `server` extra).
$(BIN)/.installed-server: $(INSTALL_INPUTS) | $(VENV)/pyvenv.cfg
	$(BIN)/python $(PIP_INSTALL) -e ".[server]"
	touch $@

# make test: the server with the test extras.
$(BIN)/.installed: $(INSTALL_INPUTS) | $(VENV)/pyvenv.cfg
	$(BIN)/python $(PIP_INSTALL) -e ".[server,dev,fast]"
	touch $@ $(BIN)/.installed-server

setup: $(BIN)/.installed

server-setup: $(BIN)/.installed-server

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

# The node clients tests/test_clients_node.py runs (tests/clients/package-lock.json) and the npm package's own
# dependencies (js/package-lock.json, tests/test_js_package.py), when node is on the machine; and the side clients'
# virtualenvs.
clients: $(SIDE_CLIENTS:%=$(VENV)/%/.installed)
	@if ! command -v node >/dev/null 2>&1; then \
		echo "node is not installed: the node tests (tests/test_clients_node.py, tests/test_js_package.py) are not collected"; \
	else \
		for folder in tests/clients js; do \
			[ $$folder/node_modules/.package-lock.json -nt $$folder/package-lock.json ] || \
				npm ci --prefix $$folder --no-audit --no-fund --loglevel=error || exit 1; \
		done; \
	fi

migrate: server-setup
	$(BIN)/python manage.py migrate --noinput

# Examples are created when missing and never replace a stored scenario that differs (manage.py restore_examples).
examples: migrate
	$(BIN)/python manage.py load_scenarios scenarios_app/examples

# A new one-time log-in link for the local admin account (a link works once).
login: server-setup
	@$(BIN)/python manage.py login_link --base-url http://$(HOST):$(PORT)

# make run TLS=1: HTTPS and WSS on the same port (google-genai opens Gemini Live over wss:// only), with the
# certificate `harness serve --tls` uses: a local CA made on first use in HARNESS_TLS_DIR (~/.cache/harnessweb/tls);
# clients trust the CA file printed (SSL_CERT_FILE for Python, NODE_EXTRA_CA_CERTS for node).
TLS ?=
SCHEME := $(if $(TLS),https,http)
TLS_FILES := 'exec("import sys\nfrom harnessweb import serving\ntry: print(*serving.certificates(sys.argv[1]), sep=\"\\n\")\nexcept serving.ServeError as e: sys.exit(f\"make run TLS=1: {e}\")")'
run: examples
	@$(BIN)/python manage.py login_link --base-url $(SCHEME)://$(HOST):$(PORT)
	@echo "Serving on $(SCHEME)://$(HOST):$(PORT)/ (OpenAI: $(SCHEME)://$(HOST):$(PORT)/v1, Anthropic: $(SCHEME)://$(HOST):$(PORT))"
ifeq ($(TLS),)
	$(BIN)/python -m harnessweb.serve -b $(HOST) -p $(PORT) harnessweb.asgi:application
else
	@files="$$($(BIN)/python -c $(TLS_FILES) $(HOST))" || exit 1; ca="$$(echo "$$files" | head -n 1)"; \
		pem="$$(echo "$$files" | tail -n 1)"; echo "TLS: the CA to trust is $$ca (SSL_CERT_FILE=$$ca)"; \
		$(BIN)/python -m harnessweb.serve -e "ssl:port=$(PORT):interface=$(HOST):privateKey=$$pem:certKey=$$pem" \
		harnessweb.asgi:application
endif

# The same ASGI application (WebSockets included) under uvicorn with uvloop and httptools, for load.
serve-fast: setup examples
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

# The server's full suite runs in .venv (PYTHON: Python 3.11 on this project's machines, where 3.11 is pyenv's
# global version); then the core's tests on each of CORE_PYTHONS (see core-test).
# The documentation site, from docs/ into .site/ (mkdocs.yml); --strict: a broken link or anchor fails.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint docs browser clients core-venvs
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest -q -m "not cluster"
	$(MAKE) --no-print-directory core-test
	DATABASE_URL=$(PG_TEST_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/pytest -q -m "backends or cluster" -p no:cacheprovider

# The core (engine, wire, the pytest plugin in-process, the llm boundary, SDK calls in-process) on the other Pythons
# it supports: a virtualenv each, .venv-3.12 and .venv-3.13, with the core and the packages its tests import, and no
# Django (so pytest-django is not there either: -p no:django). A version that is missing fails, loudly: this
# project's machines have all three (pyenv); elsewhere, install it or narrow the list: make test CORE_PYTHONS=3.13.
CORE_PYTHONS ?= 3.12 3.13
# What the core's tests import beyond the core: pytest's plugins, the SDKs they call in-process, the guard's clients.
CORE_TEST_PACKAGES := pytest pytest-asyncio pytest-xdist pytest-random-order openai anthropic google-genai cohere \
	boto3 aiohttp requests grpcio google-ai-generativelanguage langchain-openai langchain-anthropic \
	"pydantic-ai-slim[openai,anthropic,google]"
# The files that test the core without a server or a database ...
CORE_TESTS := $(addprefix tests/test_,$(addsuffix .py,playback_hashing playback_selection playback_failures \
	playback_responses playback_fallback schemas shapes structured fallback_lorem pricing \
	conversation_expectations expect_key failure_scope default_usage trace_outcome tracelogs vcr stream_summary \
	judge_verdicts wire_openai_requests wire_openai_stream wire_openai_plain wire_openai_errors \
	wire_anthropic_requests wire_anthropic_stream wire_anthropic_plain wire_anthropic_errors \
	wire_completions wire_azure_completions wire_cohere wire_embeddings \
	wire_vertex plugin_inprocess plugin_cassettes plugin_costs plugin_guard plugin_keys plugin_llm \
	plugin_llm_seed002 plugin_pytest wire_ollama wire_openrouter wire_media mcp_engine mcp_schema realtime_session \
	live_gemini_session batches_engine calls_later chaos_engine ratelimit_engine plugin_ratelimit realtime_items \
	realtime_vad live_audio))
# ... less their tests of the server (server mode starts one: the full suite runs them).
CORE_DESELECT := $(addprefix --deselect tests/,test_default_usage.py::test_the_server_refuses_a_bad_setting_naming_it \
	test_default_usage.py::test_the_server_setting_gives_the_seeds_usage \
	test_default_usage.py::test_a_scenario_asks_the_counting_server_for_the_seeds_usage \
	test_plugin_costs.py::test_it_prices_them_in_server_mode_too \
	test_plugin_keys.py::test_it_fails_tests_whose_calls_carry_another_key_in_server_mode \
	test_plugin_llm_seed002.py::test_seed_002_to_the_letter \
	test_wire_ollama.py::test_it_leaves_every_rest_route_under_api_to_django)
# python3.X when it runs, else pyenv's installed 3.X (installed, not active: the shim alone does not run it).
core_python = $(or $(shell python$(1) -c "" >/dev/null 2>&1 && echo python$(1)),$(shell p=$$(pyenv prefix $(1) 2>/dev/null) && test -x $$p/bin/python$(1) && echo $$p/bin/python$(1)))

.venv-%/.installed: $(INSTALL_INPUTS)
	@test -n "$(call core_python,$*)" || { echo "Python $* is not installed (neither python$* nor pyenv's $*):" \
		"make test runs the core's tests on it. Install it (pyenv install $*) or leave it out: make test CORE_PYTHONS=..." >&2; exit 1; }
	test -x .venv-$*/bin/python || $(call core_python,$*) -m venv .venv-$*
	.venv-$*/bin/python $(PIP_INSTALL) -e . $(CORE_TEST_PACKAGES)
	@! .venv-$*/bin/python -c "import django" 2>/dev/null || { echo ".venv-$* has Django: the core's pass must run without it" >&2; exit 1; }
	touch $@

core-venvs: $(CORE_PYTHONS:%=.venv-%/.installed)

core-test: core-venvs
	@for version in $(CORE_PYTHONS); do \
		echo "The core's tests on Python $$version (.venv-$$version, no Django)"; \
		.venv-$$version/bin/python -m pytest -q -p no:django -p no:cacheprovider $(CORE_DESELECT) $(CORE_TESTS) || exit 1; \
	done

# Refresh the screenshots in docs/ (the browser tests take them).
screenshots: setup browser
	HARNESS_SCREENSHOT_DIR=$(CURDIR)/docs $(BIN)/pytest -q tests/test_live_browser.py tests/test_browser_scenarios.py tests/test_overview_browser.py tests/test_browser_diff.py \
		tests/test_runs_list_browser.py

bench: setup examples
	@command -v ab >/dev/null || { apt-get update -qq && apt-get install -y -qq apache2-utils; }
	$(BIN)/python tests/benchmarks/load.py

clean:
	rm -rf $(VENV) $(CORE_PYTHONS:%=.venv-%) .pytest_cache .ruff_cache .test-db-* .site tests/clients/node_modules js/node_modules js/dist
