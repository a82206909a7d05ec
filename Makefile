# Chemin — the two commands a new machine needs are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000

# Test services: real PostgreSQL and Redis (see .ci/services).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/chemin
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: install run test lint services demo clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Zero configuration: SQLite and eager Celery unless DATABASE_URL / REDIS_URL are set.
run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py runserver 0.0.0.0:$(PORT)

services:
	bash .ci/services

test: install services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache db.sqlite3
