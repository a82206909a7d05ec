# Chemin — the two commands a new machine needs are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000
# The demo listens on this machine only: its passwords are public. HOST=0.0.0.0 (and
# DJANGO_ALLOWED_HOSTS) lets a tablet on a trusted network reach it.
HOST ?= 127.0.0.1
# The settings leave DEBUG off unless DJANGO_DEBUG says otherwise; the demo turns it on: its
# static files served with no collectstatic, and seed_demo (which refuses without DEBUG)
# loads its floor. DJANGO_DEBUG=0 in the environment or on the command line wins.
DJANGO_DEBUG ?= 1

# Test services: real PostgreSQL and Redis (see .ci/services).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/chemin
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: install run test lint services clean backup restore audit-deps faults load fuzz

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Zero configuration: SQLite and eager Celery unless DATABASE_URL / REDIS_URL are set.
run: install
	DJANGO_DEBUG=$(DJANGO_DEBUG) $(BIN)/python manage.py migrate --noinput
	DJANGO_DEBUG=$(DJANGO_DEBUG) $(BIN)/python manage.py seed_demo
	DJANGO_DEBUG=$(DJANGO_DEBUG) $(BIN)/python manage.py runserver $(HOST):$(PORT)

services:
	bash .ci/services

test: install services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

# Known vulnerabilities in the installed dependencies (pip-audit). When no vulnerability
# service can be reached from this machine it says so and passes; AUDIT_DEPS_STRICT=1 fails.
audit-deps: install
	$(BIN)/python .ci/audit_deps.py

# Backups of the PostgreSQL database named by DATABASE_URL (custom format, for pg_restore).
BACKUP_DIR ?= var/backups
backup:
	@case "$${DATABASE_URL:-}" in \
	  postgres://*|postgresql://*) ;; \
	  *) echo "make backup: DATABASE_URL must name a PostgreSQL database (postgres://...)." >&2; \
	     echo "Without it Chemin runs on the SQLite demo database (db.sqlite3), which this does not back up." >&2; \
	     exit 2;; \
	esac
	@mkdir -p "$(BACKUP_DIR)"
	@file="$(BACKUP_DIR)/chemin-$$(date -u +%Y%m%dT%H%M%SZ).dump"; \
	pg_dump --format=custom --file="$$file.partial" "$$DATABASE_URL" \
	  && mv "$$file.partial" "$$file" && echo "backup written: $$file" \
	  || { rm -f "$$file.partial"; echo "make backup: pg_dump failed" >&2; exit 1; }

# Replaces the contents of DATABASE_URL's database with FILE, in one transaction (all or
# nothing): docker/restore_begin.sql drops every schema (public included, with whatever was
# created after the dump) and creates public again, then psql replays the dump's SQL; COMMIT
# is sent only once pg_restore has read the whole dump. Refuses while other sessions are
# connected to the database (IGNORE_SESSIONS=yes goes on). Asks first unless CONFIRM=yes.
# Then: manage.py audit_verify.
restore:
	@case "$${DATABASE_URL:-}" in \
	  postgres://*|postgresql://*) ;; \
	  *) echo "make restore: DATABASE_URL must name a PostgreSQL database (postgres://...)." >&2; exit 2;; \
	esac
	@test -n "$(FILE)" || { echo "make restore: say which dump, FILE=var/backups/chemin-....dump" >&2; exit 2; }
	@test -f "$(FILE)" || { echo "make restore: $(FILE) does not exist" >&2; exit 2; }
	@target=$$(printf '%s' "$$DATABASE_URL" | sed -E 's#//[^@/]*@#//#'); \
	if [ "$${CONFIRM:-}" != yes ]; then \
	  printf 'Replace everything in %s with %s? Type yes to go on: ' "$$target" "$(FILE)"; \
	  read answer || answer=""; \
	  [ "$$answer" = yes ] || { echo "not restored" >&2; exit 1; }; \
	fi; \
	ignore=; [ "$${IGNORE_SESSIONS:-}" = yes ] && ignore="--set=ignore_sessions=yes"; \
	failed=$$(mktemp) || exit 1; \
	{ pg_restore --no-owner --no-acl --file=- "$(FILE)" && echo 'COMMIT;' || echo x >"$$failed"; } \
	  | psql --no-psqlrc --quiet --set=ON_ERROR_STOP=1 $$ignore --dbname="$$DATABASE_URL" \
	      --file=docker/restore_begin.sql --file=- >/dev/null; \
	status=$$?; [ -s "$$failed" ] && status=1; rm -f "$$failed"; \
	if [ $$status -ne 0 ]; then echo "make restore: failed, $$target is as it was" >&2; exit 1; fi; \
	echo "restored $(FILE) into $$target; now check it: manage.py audit_verify"

# The long fuzz run (tests/fuzz: schemathesis against /api/schema/ as every role, new random
# examples each run; `make test` runs a bounded, repeatable one). ~30-40 min at 100 examples.
FUZZ_EXAMPLES ?= 100
fuzz: install services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_RANDOM=1 \
	  $(BIN)/python -m pytest tests/fuzz -q -p no:cacheprovider

# Fault injection (bench/faults.py): kills the web worker, Redis, the Celery worker and
# PostgreSQL under recording tablets, on its own throwaway PostgreSQL cluster, redis-server,
# gunicorn and worker (loopback, free ports; the machine's own services are never touched).
# SCENARIO=web|redis|worker|postgres runs one. About 2.5 minutes.
faults: install
	$(BIN)/python bench/faults.py --scenario $(or $(SCENARIO),all)

# The 10-minute load run (bench/load.py): 16 tablets, gunicorn and a real Celery worker, a
# report built in the middle; PASS/FAIL per target. WRITES to its own database.
LOAD_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/chemin_bench_load
load: install services
	DATABASE_URL=$(LOAD_DATABASE_URL) $(BIN)/python bench/load.py $(LOAD_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache db.sqlite3
