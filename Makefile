# Two commands set everything up: `make run` and `make test` (README).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint format migrate demo bench clean install

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py seed_demo

# The server and one background worker; Ctrl-C stops both (the worker finishes its current task).
# The worker runs in a session of its own, so that it gets one SIGTERM from the trap, not the terminal's SIGINT too.
run: demo
	@setsid $(PY) manage.py run_worker & worker=$$!; \
	trap 'kill -TERM $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	$(PY) -m chatplatform.server chatplatform.asgi:application --host $(HOST) --port $(PORT) --workers 1 --lifespan off --ws-per-message-deflate false

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install
	$(PY) bench/api_overhead.py
	$(PY) bench/admin_resources.py
	$(PY) bench/converse.py
	$(PY) bench/events.py

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles
