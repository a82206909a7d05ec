"""The request metrics under gunicorn as docker/Dockerfile runs it: several worker processes,
one set of counters. Without prometheus_client's multiprocess mode a scrape read only the
worker that answered it, so `chemin_http_requests_total` went up and down between scrapes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from config import gunicorn as gunicorn_config

ROOT = Path(__file__).resolve().parents[2]


def _image_command() -> list[str]:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    match = re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE)
    assert match, "docker/Dockerfile has no CMD [...] line"
    return json.loads(match.group(1))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (http on loopback)
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _requests_total(text: str, route: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "chemin_http_requests_total" and sample.labels.get("route") == route:
                return sample.value
    return 0.0


def test_the_image_runs_gunicorn_with_chemin_s_settings():
    command = _image_command()
    assert command[0] == "gunicorn"
    assert command[command.index("-c") + 1] == "python:config.gunicorn"


def test_every_scrape_counts_the_requests_of_every_worker(tmp_path):
    command = _image_command()
    port = _free_port()
    command[command.index("--bind") + 1] = f"127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "gunicorn"), *command[1:]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROMETHEUS_"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.base", LOG_LEVEL="WARNING",
               PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"))  # fmt: skip
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "counter_99999.db").write_bytes(b"left by an earlier run")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
        for _ in range(12):
            assert _get(f"{base}/api/schema/")[0] in (401, 403)
        seen = set()
        for _ in range(8):
            status, text = _get(f"{base}/metrics")
            assert status == 200
            seen.add(_requests_total(text, "schema"))
        assert seen == {12.0}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert not list((tmp_path / "metrics").glob("counter_99999.db"))


def test_the_directory_is_the_arbiter_s_own_when_none_is_given(monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")  # restored (unset) after the test
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")

    class Server:
        class log:
            @staticmethod
            def info(*args):
                pass

    gunicorn_config.on_starting(Server)
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    try:
        assert directory.is_dir() and not any(directory.iterdir())
    finally:
        gunicorn_config.on_exit(Server)
        monkeypatch.setattr(gunicorn_config, "_own_directory", None)
    assert not directory.exists()
