"""`make backup` and `make restore` on a real day: a day seeded through the services is
dumped with pg_dump (custom format), restored into a FRESH database, `manage.py
audit_verify` passes on the restored copy, and the audit chains, postings and coups are
identical, byte for byte, to the original's.

A restore gives exactly the dumped database: what was created after the dump (a table, a
function, a trigger, a schema, an extension, a django_migrations row) is gone, and the
catalogue (schemas, relations, functions with their bodies, triggers, extensions, the public
schema's owner and privileges) and every table's rows are the dumped database's. A restore
that fails midway (a truncated dump) or is refused (other sessions connected) changes
nothing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (
        shutil.which("pg_dump")
        and shutil.which("pg_restore")
        and shutil.which("psql")
        and shutil.which("make")
    ),
    reason="needs pg_dump, pg_restore, psql and make",
)

DIGEST_QUERIES = {
    "audit": "SELECT s.name, e.seq, e.action, e.prev_hash, e.hash FROM audit_auditevent e "
    "JOIN audit_auditstream s ON s.id = e.stream_id ORDER BY s.name, e.seq",
    "postings": "SELECT id, coup_id, session_id, patron_id, bet_id, role, amount, at FROM tables_posting ORDER BY id",
    "coups": "SELECT id, session_id, number, state, cards::text, settled::text, winner, cagnotte, banker_net, "
    "conforming FROM tables_coup ORDER BY id",
}

USER_SCHEMAS = "n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"
CATALOGUE_QUERIES = {
    "schemas": f"SELECT n.nspname, n.nspowner::regrole::text, n.nspacl::text, obj_description(n.oid, 'pg_namespace') "
    f"FROM pg_namespace n WHERE {USER_SCHEMAS} ORDER BY 1",
    "relations": "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    f"WHERE {USER_SCHEMAS} ORDER BY 1, 2",
    "functions": "SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc) "
    f"FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE {USER_SCHEMAS} ORDER BY 1, 2, 3",
    "triggers": "SELECT t.tgrelid::regclass::text, t.tgname, t.tgfoid::regproc::text, t.tgenabled, "
    "pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE NOT t.tgisinternal ORDER BY 1, 2",
    "extensions": "SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
    "ORDER BY 1",
}

# What a later release (or a hand) adds after the dump; none of it is in the dump.
LATE_OBJECTS = """
CREATE TABLE public.late_table (id integer PRIMARY KEY, note text);
INSERT INTO public.late_table VALUES (1, 'written after the dump');
CREATE SEQUENCE public.late_seq;
CREATE FUNCTION public.late_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER late_trigger BEFORE INSERT ON public.late_table FOR EACH ROW EXECUTE FUNCTION public.late_fn();
CREATE TRIGGER late_audit_trigger BEFORE INSERT ON public.audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION public.late_fn();
CREATE OR REPLACE FUNCTION public.audit_refuse_truncate() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN RETURN NULL; END $$;
CREATE INDEX late_index ON public.tables_coup (number);
CREATE SCHEMA late_schema;
CREATE TABLE late_schema.elsewhere (x integer);
INSERT INTO django_migrations (app, name, applied) VALUES ('audit', '9999_a_later_release', now());
"""


def _url(name: str) -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{name}"


def _query_digest(url: str, queries: dict[str, str]) -> dict[str, str]:
    out = {}
    with psycopg.connect(url) as conn:
        for name, sql in queries.items():
            h = hashlib.sha256()
            rows = conn.execute(sql).fetchall()
            for row in rows:
                h.update(repr(row).encode())
            out[name] = f"{len(rows)}:{h.hexdigest()}"
    return out


def digest(url: str) -> dict[str, str]:
    return _query_digest(url, DIGEST_QUERIES)


def snapshot(url: str) -> dict[str, object]:
    """The catalogue as rows, and every table's rows as a digest (a table in any schema)."""
    with psycopg.connect(url) as conn:
        out: dict[str, object] = {
            name: conn.execute(sql).fetchall() for name, sql in CATALOGUE_QUERIES.items()
        }
        tables = conn.execute(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE c.relkind = 'r' AND {USER_SCHEMAS} ORDER BY 1"
        ).fetchall()
        for (table,) in tables:
            out[table] = conn.execute(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"
            ).fetchone()
    return out


def make(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CONFIRM", "IGNORE_SESSIONS", "MAKEFLAGS")
    }
    full.update(env)
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=ROOT, env=full, capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def restore(dump: Path, url: str, **env: str) -> subprocess.CompletedProcess:
    return make("restore", f"FILE={dump}", "CONFIRM=yes", DATABASE_URL=url, **env)


def audit_verify(url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "audit_verify"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings.base"},
    )  # fmt: skip


def backup_of_the_test_database(tmp_path: Path) -> tuple[str, Path]:
    """`make backup` of the test database as it is now: its URL and the one dump written."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    source = _url(connection.settings_dict["NAME"])
    backups = tmp_path / "backups"
    result = make("backup", f"BACKUP_DIR={backups}", DATABASE_URL=source)
    assert result.returncode == 0, result.stderr
    dumps = list(backups.glob("chemin-*.dump"))
    assert len(dumps) == 1 and dumps[0].stat().st_size > 0, result.stdout
    assert not list(backups.glob("*.partial"))
    return source, dumps[0]


def add_late_objects(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(LATE_OBJECTS)
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'citext'").fetchone():
            conn.execute("CREATE EXTENSION citext SCHEMA public")


@pytest.fixture
def fresh_database():
    """The URL of a new, empty database, dropped afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    name = f"chemin_restore_{uuid.uuid4().hex[:10]}"
    admin = _url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _url(name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def day(commissario, capo_partita, changeur, direzione):
    from tests.audit.test_reports import build_day

    return build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_backup_then_restore_into_a_fresh_database(tmp_path, day, fresh_database):
    source, dump = backup_of_the_test_database(tmp_path)
    original = digest(source)
    assert all(not v.startswith("0:") for v in original.values()), original
    target = fresh_database

    # Without CONFIRM=yes and nobody to answer: nothing is restored.
    refused = make("restore", f"FILE={dump}", DATABASE_URL=target)
    assert refused.returncode != 0 and "not restored" in refused.stderr
    assert "password" not in refused.stdout

    restored = restore(dump, target)
    assert restored.returncode == 0, restored.stderr
    verify = audit_verify(target)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "OK: every chain verifies." in verify.stdout
    assert digest(target) == original
    assert snapshot(target) == snapshot(source)
    # Restoring again over the restored copy gives the same.
    again = restore(dump, target)
    assert again.returncode == 0, again.stderr
    assert digest(target) == original


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_restore_leaves_nothing_the_dump_does_not_hold(tmp_path, day, fresh_database):
    """The database moved on after the dump (a later release migrated it, a hand added a
    trigger to the audit trail): the restore gives back the dumped database, not a mix."""
    source, dump = backup_of_the_test_database(tmp_path)
    target = fresh_database
    assert restore(dump, target).returncode == 0
    add_late_objects(target)
    dumped = snapshot(source)
    assert snapshot(target) != dumped

    restored = restore(dump, target)
    assert restored.returncode == 0, restored.stderr
    after = snapshot(target)
    assert after == dumped
    assert "public.late_table" not in after and "late_schema.elsewhere" not in after
    assert not [r for r in after["triggers"] if "late" in r[1]]
    assert after["schemas"] == [("public", "pg_database_owner", "{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}",
                                 "standard public schema")]  # fmt: skip
    assert digest(target) == digest(source)
    verify = audit_verify(target)
    assert verify.returncode == 0 and "OK: every chain verifies." in verify.stdout, (
        verify.stdout + verify.stderr
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_restore_that_fails_midway_leaves_the_database_as_it_was(tmp_path, day, fresh_database):
    _source, dump = backup_of_the_test_database(tmp_path)
    target = fresh_database
    assert restore(dump, target).returncode == 0
    add_late_objects(target)
    before = snapshot(target)
    truncated = tmp_path / "truncated.dump"
    data = dump.read_bytes()
    truncated.write_bytes(data[: len(data) * 99 // 100])
    # Midway: pg_restore reads the table of contents and writes part of the SQL, then fails.
    partial = subprocess.run(
        ["pg_restore", "--file=-", str(truncated)], capture_output=True, text=True, timeout=60
    )
    assert partial.returncode != 0 and "CREATE TABLE public.audit_auditevent" in partial.stdout, (
        partial.stderr
    )

    failed = restore(truncated, target)
    assert failed.returncode != 0
    assert "is as it was" in failed.stderr and "restored" not in failed.stdout, failed.stdout + failed.stderr
    assert snapshot(target) == before
    assert before["public.late_table"][0] == 1


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_while_other_sessions_are_connected(tmp_path, fresh_database):
    source, dump = backup_of_the_test_database(tmp_path)
    target = fresh_database
    assert restore(dump, target).returncode == 0
    add_late_objects(target)
    before = snapshot(target)
    with psycopg.connect(target, autocommit=True, application_name="chemin-web") as app:
        app.execute("SELECT 1")
        refused = restore(dump, target)
        assert refused.returncode != 0
        assert "other sessions are connected" in refused.stderr and "chemin-web" in refused.stderr, (
            refused.stderr
        )
        assert snapshot(target) == before
        # The operator says the other sessions do not matter (an idle one holds no lock).
        forced = restore(dump, target, IGNORE_SESSIONS="yes")
        assert forced.returncode == 0, forced.stderr
    assert snapshot(target) == snapshot(source)


@pytest.mark.parametrize("url", ["", "sqlite:///db.sqlite3"])
def test_backup_refuses_sqlite_with_a_clear_message(tmp_path, url):
    env = {"DATABASE_URL": url} if url else {}
    result = make("backup", f"BACKUP_DIR={tmp_path}", **env)
    assert result.returncode != 0
    assert "PostgreSQL" in result.stderr and "SQLite" in result.stderr
    assert not list(tmp_path.iterdir())


def test_restore_needs_a_file():
    result = make("restore", "CONFIRM=yes", DATABASE_URL="postgres://nobody@127.0.0.1:1/none")
    assert result.returncode != 0 and "FILE=" in result.stderr
