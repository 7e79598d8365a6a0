# Two commands set everything up: `make run` and `make test` (README).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint format migrate demo bench clean install vendor
CHROMIUM := /usr/bin/chromium
# Said before and after the suite, so it is the last thing a person reads.
NO_CHROMIUM = test -x $(CHROMIUM) || printf '\n%s\n%s\n%s\n\n' \
	'!!!!!!!! Chromium is not installed: the browser tests of the chat page (tests/pages) are SKIPPED.' \
	'!!!!!!!! Install it, then run make test again:   sudo apt-get install -y chromium' \
	'!!!!!!!! (.ci/run installs it before the suite.)'
# The JavaScript linter (Biome, a native binary from npm, pinned in package.json): a development
# tool only, installed by `npm ci`; `make run` and `make test` never need Node.
BIOME := node_modules/.bin/biome
NO_BIOME = printf '\n%s\n%s\n\n' \
	'!!!!!!!! Biome is not installed: the JavaScript of the chat page (static/chat) was NOT linted.' \
	'!!!!!!!! Install it (needs npm), then run make lint again:   npm ci'

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --noinput

# `make run` is the laptop setup: DEBUG on unless the environment says otherwise (plain-HTTP
# cookies, and the demo's accounts with the passwords printed below; seed_demo creates none
# outside DEBUG).
run demo: export DEBUG ?= true

# Migrations are applied by seed_demo --migrate when any is unapplied: one process per start.
demo: install
	$(PY) manage.py seed_demo --migrate --url http://$(HOST):$(PORT)

# The demo's site-wide features when CHAT_SITE_FEATURES is unset: the embedded default plus tags,
# so the demo's widgets show (docs/widgets.md). Any CHAT_SITE_FEATURES of the environment wins.
DEMO_SITE_FEATURES := {"promptInputFieldLabel": "Ask a question", "tags": {"enabled": true}}

# The server and one background worker; Ctrl-C stops both (the worker finishes its current task).
# The worker runs in a session of its own, so that it gets one SIGTERM from the trap, not the terminal's SIGINT too.
run: demo
	@printf '\nThe chat page: http://%s:%s/   demo login: demo / demo-chat\nDjango admin:  http://%s:%s/admin/   admin / admin-demo\n' $(HOST) $(PORT) $(HOST) $(PORT)
	@printf 'Doors (docs/doors.md; API key: `.venv/bin/python manage.py issue_token demo`, model: demo):\n  OpenAI Chat Completions: http://%s:%s/v1/chat/completions\n  OpenAI Responses:        http://%s:%s/v1/responses\n  (OpenAI SDK base_url:    http://%s:%s/v1)\n  A2A agent:               http://%s:%s/a2a/demo   (its card: .../a2a/demo/.well-known/agent-card.json)\n  MCP (tool ask_demo):     http://%s:%s/mcp\n  AG-UI (HttpAgent url):   http://%s:%s/api/ag-ui/demo\n\n' $(HOST) $(PORT) $(HOST) $(PORT) $(HOST) $(PORT) $(HOST) $(PORT) $(HOST) $(PORT) $(HOST) $(PORT)
	@[ -n "$$CHAT_SITE_FEATURES" ] || export CHAT_SITE_FEATURES='$(DEMO_SITE_FEATURES)'; \
	setsid $(PY) manage.py run_worker & worker=$$!; \
	trap 'kill -TERM $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	$(PY) -m chatplatform.server chatplatform.asgi:application --host $(HOST) --port $(PORT) --workers 1 --lifespan off --ws-per-message-deflate false

# One worker more than there are cores: the tests wait on servers, browsers and sockets more than
# they compute (docs/decisions.md, "The test suite"). A test file stays on one worker, so that its
# module-wide servers start once.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
test: install
	@$(NO_CHROMIUM)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile; status=$$?; $(NO_CHROMIUM); exit $$status

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	@if [ -x $(BIOME) ]; then $(BIOME) ci; else $(NO_BIOME); fi

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
	@if [ -x $(BIOME) ]; then $(BIOME) check --write; else $(NO_BIOME); fi

bench: install
	$(PY) bench/api_overhead.py
	$(PY) bench/admin_resources.py
	$(PY) bench/config.py
	$(PY) bench/converse.py
	$(PY) bench/events.py
	$(PY) bench/page.py
	$(PY) bench/widget_store.py

# Refresh the vendored browser libraries from the npm registry (needs npm; nothing else does).
vendor:
	scripts/refresh-vendor.sh

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles screenshots
