"""The zero-configuration demo (`make run`: SQLite, eager Celery) keeps the auditor's tools:
`manage.py audit_verify` verifies the demo floor's trail on SQLite and names a patron renamed
behind the services there too (its patron check orders text by bytes: a collation each
database names its own way)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_") and k not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"DATABASE_URL": f"sqlite:///{db}", "DJANGO_DEBUG": "1"})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_audit_verify_runs_on_the_demo_s_sqlite_and_names_a_renamed_patron(tmp_path):
    db = tmp_path / "demo.sqlite3"
    for step in (("migrate", "--noinput"), ("seed_demo",)):
        done = _manage(db, *step)
        assert done.returncode == 0, done.stdout + done.stderr
    verified = _manage(db, "audit_verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "OK: every chain verifies." in verified.stdout

    with sqlite3.connect(db) as conn:  # behind the services: no event says it
        (pk,) = conn.execute("SELECT id FROM floor_patron ORDER BY id LIMIT 1").fetchone()
        conn.execute("UPDATE floor_patron SET last_name = 'Bianchi' WHERE id = ?", (pk,))
    refused = _manage(db, "audit_verify")
    assert refused.returncode != 0
    assert "patron_not_as_recorded" in refused.stdout + refused.stderr
