"""gunicorn's settings for Chemin (`gunicorn -c python:config.gunicorn config.wsgi:application`,
as docker/Dockerfile runs it).

The request metrics (config/metrics.py) are counted in each worker process. Without
prometheus_client's multiprocess mode a scrape reads the one worker that answered it: with 3
workers `chemin_http_requests_total` went up and down from one scrape to the next, which
Prometheus takes for counter resets (rates and alerts wrong). So the arbiter gives its
workers a directory to share: PROMETHEUS_MULTIPROC_DIR if set (emptied at the start: files of
an earlier run would be counted again), else a new one of its own, removed at exit. Set here,
before any worker is forked, so that prometheus_client reads it when a worker imports it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_VAR = "PROMETHEUS_MULTIPROC_DIR"
_own_directory: str | None = None


def on_starting(server) -> None:
    global _own_directory
    given = os.environ.get(_VAR)
    if given:
        directory = Path(given)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink()
    else:
        _own_directory = tempfile.mkdtemp(prefix="chemin-metrics-")
        os.environ[_VAR] = _own_directory
    server.log.info("request metrics shared by the workers in %s", os.environ[_VAR])


def child_exit(server, worker) -> None:
    # A dead worker's gauges (none today) would linger; its counters are kept, as they must be.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    if _own_directory:
        shutil.rmtree(_own_directory, ignore_errors=True)
