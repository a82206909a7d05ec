"""A Redis outage of any length: the Celery worker keeps reconnecting and takes up its queue
again when Redis answers. Celery's default gives up after 100 attempts (2, 4, 6... then
every 30 s: some 46 minutes) with "Unrecoverable error: OperationalError(...)" and the worker
process ends: no report was built after a longer outage until someone restarted it (seen with
the limit lowered to 3: the worker exited after its third attempt)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import django
django.setup()
from config.celery import app
print(repr(app.conf.broker_connection_max_retries), repr(app.conf.broker_connection_retry))
"""


def test_the_worker_never_gives_up_reconnecting_to_redis():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "PATH": "/usr/bin:/bin",
            "REDIS_URL": "redis://127.0.0.1:1/0",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "True"]
