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


def test_the_report_s_staff_names_are_read_on_the_demo_s_sqlite(tmp_path):
    """The report's sections name staff in SQL (floor.selectors.staff_said): SQLite has no
    BTRIM, and the demo's report failed to build ("no such function: BTRIM"). Each section that
    names staff is read on the demo's database, and the expression strips as Python does."""
    db = tmp_path / "demo.sqlite3"
    for step in (("migrate", "--noinput"), ("seed_demo",)):
        done = _manage(db, *step)
        assert done.returncode == 0, done.stdout + done.stderr
    script = (
        "from floor import selectors as fs; from tables import report_selectors as rs\n"
        "from django.contrib.auth import get_user_model\n"
        "day = fs.gaming_day_list().order_by('pk').first().pk\n"
        "for rows in (fs.day_interruption_rows(gaming_day_id=day, named=True), fs.day_minimum_change_rows(gaming_day_id=day),\n"
        "             rs.shoe_rows(gaming_day_id=day, named=True), rs.annulled_rows(gaming_day_id=day),\n"
        "             rs.voided_card_rows(gaming_day_id=day), rs.faux_tirage_bar_rows(gaming_day_id=day),\n"
        "             rs.succession_rows(gaming_day_id=day), rs.succession_offer_rows(gaming_day_id=day),\n"
        "             rs.auction_rows(gaming_day_id=day), rs.bid_rows(gaming_day_id=day)):\n"
        "    list(rows)\n"
        "User = get_user_model()\n"
        "User.objects.filter(username='capo1').update(first_name='\\u3000Giulia', last_name='Contarini\\u00a0')\n"
        "from floor.models import TableSession\n"
        "said = TableSession.objects.filter(capo_partita__username='capo1')\n"
        "said = said.annotate(said=fs.staff_said('capo_partita'), no=fs.staff_said('closed_by'))\n"
        "print(sorted(set(said.values_list('capo_partita__username', 'said', 'no'))))\n"
        "print(User.objects.get(username='capo1').get_full_name() == 'Giulia Contarini')\n"
        "User.objects.filter(username='capo1').update(first_name=' ', last_name='\\t')\n"
        "print(sorted(set(said.values_list('capo_partita__username', 'said', 'no'))))\n"
    )
    done = _manage(db, "shell", "-c", script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "('capo1', 'Giulia Contarini (capo1)', None)" in done.stdout
    assert "True" in done.stdout  # as Python's get_full_name strips it
    assert "('capo1', 'capo1', None)" in done.stdout  # no name: the username alone
