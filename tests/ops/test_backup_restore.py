"""`make backup` and `make restore` on a real day: a day seeded through the services is
dumped with pg_dump (custom format), restored into a FRESH database, `manage.py
audit_verify` passes on the restored copy, and the audit chains, postings and coups are
identical, byte for byte, to the original's."""

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
    not (shutil.which("pg_dump") and shutil.which("pg_restore") and shutil.which("make")),
    reason="needs pg_dump, pg_restore and make",
)

DIGEST_QUERIES = {
    "audit": "SELECT s.name, e.seq, e.action, e.prev_hash, e.hash FROM audit_auditevent e "
    "JOIN audit_auditstream s ON s.id = e.stream_id ORDER BY s.name, e.seq",
    "postings": "SELECT id, coup_id, session_id, patron_id, bet_id, role, amount, at FROM tables_posting ORDER BY id",
    "coups": "SELECT id, session_id, number, state, cards::text, settled::text, winner, cagnotte, banker_net, "
    "conforming FROM tables_coup ORDER BY id",
}


def _url(name: str) -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{name}"


def digest(url: str) -> dict[str, str]:
    out = {}
    with psycopg.connect(url) as conn:
        for name, sql in DIGEST_QUERIES.items():
            h = hashlib.sha256()
            rows = conn.execute(sql).fetchall()
            for row in rows:
                h.update(repr(row).encode())
            out[name] = f"{len(rows)}:{h.hexdigest()}"
    return out


def make(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CONFIRM", "MAKEFLAGS")}
    full.update(env)
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=ROOT, env=full, capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_backup_then_restore_into_a_fresh_database(tmp_path, commissario, capo_partita, changeur, direzione):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    from tests.audit.test_reports import build_day

    build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    source = _url(connection.settings_dict["NAME"])
    original = digest(source)
    assert all(not v.startswith("0:") for v in original.values()), original

    backups = tmp_path / "backups"
    result = make("backup", f"BACKUP_DIR={backups}", DATABASE_URL=source)
    assert result.returncode == 0, result.stderr
    dumps = list(backups.glob("chemin-*.dump"))
    assert len(dumps) == 1 and dumps[0].stat().st_size > 0, result.stdout
    assert not list(backups.glob("*.partial"))

    fresh = f"chemin_restore_{uuid.uuid4().hex[:10]}"
    admin = _url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{fresh}"')
    try:
        target = _url(fresh)
        # Without CONFIRM=yes and nobody to answer: nothing is restored.
        refused = make("restore", f"FILE={dumps[0]}", DATABASE_URL=target)
        assert refused.returncode != 0 and "not restored" in refused.stderr
        assert "password" not in refused.stdout

        restored = make("restore", f"FILE={dumps[0]}", "CONFIRM=yes", DATABASE_URL=target)
        assert restored.returncode == 0, restored.stderr
        verify = subprocess.run(
            [sys.executable, "manage.py", "audit_verify"], cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "DATABASE_URL": target, "DJANGO_SETTINGS_MODULE": "config.settings.base"},
        )  # fmt: skip
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert "OK: every chain verifies." in verify.stdout
        assert digest(target) == original
        # Restoring again over the restored copy (--clean --if-exists) gives the same.
        again = make("restore", f"FILE={dumps[0]}", "CONFIRM=yes", DATABASE_URL=target)
        assert again.returncode == 0, again.stderr
        assert digest(target) == original
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')


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
