"""Tasks enqueued by name must be known in every process, the web one included.

The floor enqueues the end-of-day report by name (it may not import audit). Celery sends a
name it does not know to the broker even in eager mode, so without the registration in
AppConfig.ready() `make run` (eager, no Redis) would close a day and never build its report."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import django
django.setup()
from celery import current_app
print(sorted(n for n in current_app.tasks if n.startswith(("audit.", "floor."))))
"""


def test_report_and_beat_tasks_are_registered_in_a_plain_django_process():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"DJANGO_SETTINGS_MODULE": "config.settings.base", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    names = result.stdout
    assert "audit.tasks.report_build" in names
    assert "floor.tasks.gaming_days_close_due" in names
    assert "floor.tasks.idempotency_keys_purge" in names
