"""Fault injection (issue #8 point 2): Chemin under a dying web worker, Redis, Celery worker
and PostgreSQL, on loopback only, bounded in time (run by hand).

    .venv/bin/python bench/faults.py --scenario all        # or web | redis | worker | postgres

Nothing shared is touched: the script starts its OWN PostgreSQL cluster (initdb into a
temporary directory, as the `postgres` OS user when run as root; fsync off, which a process
crash does not need), its OWN redis-server (no persistence), its own gunicorn and its own
Celery worker, every one on a free loopback port, never 5432 or 6379, and it signals only the
processes it started (by their pid or process group). Everything is stopped and deleted at
the end, whatever happens (--keep keeps the directory: logs, report files).

Each scenario seeds its own casino (bench/coups.py's seed: venezia tables, seated patrons, a
shoe, a bank) and drives it with bench/coups.py's Tablet, made patient: a request cut off
(connection refused or reset) or answered 5xx is sent again with the SAME Idempotency-Key
until it gets a final answer (at most --retry-seconds after the recording ends).

web       tablets record coups while gunicorn workers are killed with SIGKILL (the master
          forks new ones): once with a coup's transaction certainly half-written (the script
          holds table 1's audit head, so the request waits inside its transaction), then one
          worker at random moments; the tablets retry with the same keys. A last tablet loses
          three answers in transit (hangs up before reading) and retries them.
          PASS: requests were cut in flight, the half-written transaction was rolled back;
          every key that got a 201 is one coup row, every coup row is one key (a replay
          answers the first coup, never records a second); no 500.
redis     tablets record while redis-server is stopped; the sessions and the day are closed
          while it is still down (the report cannot be enqueued); Redis comes back, the beat
          task reports_sweep is sent through the broker and the Celery worker builds the report.
          PASS: 201s during the outage and no 5xx on the coup path; the close answers; the
          report is built once (one DayReport, its 3 files verify); coups exactly once.
worker    a day is recorded and closed; while the worker builds its report the whole worker
          (main process and pool child) is killed with SIGKILL; the message stays unacked in
          Redis (acks_late); after CELERY_VISIBILITY_TIMEOUT (set to --visibility-timeout here)
          a new worker starts and gets it back.
          PASS: the report completes, once (one DayReport, the same task id, one run after the
          restart, 3 file rows, the files verify), the queue and the unacked set end empty.
postgres  tablets record while PostgreSQL is stopped (pg_ctl -m immediate: a crash, recovery
          at start) for --pg-down seconds, then started again.
          PASS: clients see 503 `service_unavailable` in the API's error shape (or, reported
          apart, a cut connection), never a 500; 201s resume after the restart; no partial
          coup: every coup row is settled with postings summing to zero and bets, each 201 is
          one row, each row one key; the audit chain verifies.

Every scenario ends with one line `PASS <name>: ...` or `FAIL <name>: ...` and its figures;
the exit status is 1 if any failed. Whole run: about 2.5 minutes on 2 busy cores (each
scenario has its own time limit, --scenario-timeout, 180 s by default)."""

from __future__ import annotations

import argparse
import contextlib
import glob
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.coups import Tablet, ensure_database, seed, start_server, stop_server  # noqa: E402

# The machine's shared services: never used, stopped or signalled by this script.
SHARED_PORTS = frozenset({5432, 6379})
SCENARIOS = ("web", "redis", "worker", "postgres")
RECORD_PATH_SUFFIX = "/coups/record/"
REPORT_FORMATS = 3  # csv, xlsx, pdf


class ScenarioTimeout(Exception):
    pass


class GaveUp(Exception):
    """A request that got no final answer before the tablet's retry deadline."""


def say(msg: str) -> None:
    print(msg, flush=True)


def private_port(port: int) -> int:
    """`port` if it is free on 127.0.0.1 and not a shared service's; 0 picks a free one."""
    if port in SHARED_PORTS:
        raise SystemExit(f"port {port} belongs to the machine's shared services: refusing to use it")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise SystemExit(f"port {port} on 127.0.0.1 is taken ({exc}); pass another or 0") from exc
        chosen = s.getsockname()[1]
    if chosen in SHARED_PORTS:  # cannot happen for a free port, but never risk it
        raise SystemExit(f"refusing port {chosen}")
    return chosen


def wait_for(predicate, timeout: float, interval: float = 0.1, what: str = "condition"):
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc), so that only our own processes are signalled."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fp:
                stat = fp.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


# --------------------------------------------------------------------------- private services


class PrivatePostgres:
    """A throwaway cluster: initdb into a temp dir, pg_ctl on a loopback port. Every command
    names our data directory, so stop/restart can only reach this cluster."""

    def __init__(self, port: int):
        self.port = port
        self.base = Path(tempfile.mkdtemp(prefix="chemin-faults-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "postgres.log"
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise SystemExit("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(bins[-1]).parent
        self.as_postgres = os.geteuid() == 0  # initdb refuses root
        if self.as_postgres:
            shutil.chown(self.base, "postgres", "postgres")
        self.url = f"postgres://postgres@127.0.0.1:{port}/chemin_faults"

    def _run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        argv = [str(self.bin / cmd[0]), *cmd[1:]]
        if self.as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)

    def init(self) -> None:
        done = self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                         "--locale=C", "--no-sync")  # fmt: skip
        if done.returncode:
            raise SystemExit(f"initdb failed: {done.stderr.strip()}")

    def start(self) -> None:
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.base} "
                "-c fsync=off -c full_page_writes=off -c max_connections=60 -c shared_buffers=32MB")  # fmt: skip
        done = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start"
        )
        if done.returncode:
            raise RuntimeError(f"pg_ctl start failed: {done.stdout.strip()} {done.stderr.strip()}")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status").returncode == 0

    def cleanup(self, keep: bool) -> None:
        if self.data.exists() and self.running():
            self.stop("immediate")
        if not keep:
            shutil.rmtree(self.base, ignore_errors=True)


class PrivateRedis:
    """redis-server as our child on a loopback port, no persistence."""

    def __init__(self, port: int, directory: Path):
        self.port, self.dir = port, directory
        self.proc: subprocess.Popen | None = None
        self.url = f"redis://127.0.0.1:{port}/0"
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = self.dir / f"redis-{self.starts}.log"
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--dir", str(self.dir), "--logfile", str(log)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        wait_for(self.ping, 15, what="redis-server")

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1, socket_timeout=2)

    def ping(self) -> bool:
        try:
            with contextlib.closing(self.client()) as c:
                return bool(c.ping())
        except Exception:
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class CeleryWorker:
    """`celery -A config worker` (prefork, one child) in its own process group."""

    def __init__(self, env: dict, directory: Path):
        self.env, self.dir = env, directory
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.log: Path | None = None

    def start(self) -> None:
        self.starts += 1
        self.log = self.dir / f"worker-{self.starts}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(ROOT / ".venv" / "bin" / "celery"), "-A", "config", "worker", "--pool", "prefork",
                 "--concurrency", "1", "--loglevel", "INFO", "-n", f"faults{self.starts}-{os.getpid()}@%h",
                 "--without-gossip", "--without-mingle", "--without-heartbeat"],
                env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_for(
            lambda: " ready." in self.text() or self.proc.poll() is not None, 60, 0.2, "the Celery worker"
        )
        if self.proc.poll() is not None:
            raise RuntimeError(f"the Celery worker exited: {self.text()[-2000:]}")

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def kill9(self) -> list[int]:
        pids = [self.proc.pid, *children_of(self.proc.pid)]
        os.killpg(self.proc.pid, signal.SIGKILL)  # the group we started: main process and pool
        self.proc.wait()
        self.proc = None
        return pids

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


class Infra:
    """Our PostgreSQL, Redis, gunicorn and Celery worker, and their environment."""

    def __init__(self, args):
        self.args = args
        self.dir = Path(tempfile.mkdtemp(prefix="chemin-faults-"))
        self.pg = PrivatePostgres(private_port(args.pg_port))
        self.redis = PrivateRedis(private_port(args.redis_port), self.dir)
        self.web_port = private_port(args.web_port)
        self.web: subprocess.Popen | None = None
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "CELERY_"))
        }
        self.env.update({
            "DJANGO_SETTINGS_MODULE": "config.settings.base", "DJANGO_DEBUG": "0",
            "DATABASE_URL": self.pg.url, "DATABASE_CONN_MAX_AGE": "600", "REDIS_URL": self.redis.url,
            "CELERY_VISIBILITY_TIMEOUT": str(args.visibility_timeout), "CHEMIN_MEDIA_ROOT": str(self.dir / "media"),
            "LOG_LEVEL": "INFO", "LOG_FORMAT": "plain", "READYZ_CELERY_TIMEOUT_MS": "500",
        })  # fmt: skip
        self.worker = CeleryWorker(self.env, self.dir)

    def up(self) -> None:
        started = time.perf_counter()
        self.pg.init()
        self.pg.start()
        self.redis.start()
        # This process is a client of the same private services (seeding, checks, send_task).
        for key in ("DATABASE_URL", "REDIS_URL", "CELERY_VISIBILITY_TIMEOUT", "CHEMIN_MEDIA_ROOT"):
            os.environ[key] = self.env[key]
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.base"
        os.environ["DJANGO_DEBUG"] = "0"
        os.environ["LOG_LEVEL"] = "WARNING"
        ensure_database(self.pg.url)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        say(f"private services: PostgreSQL {self.pg.bin.parent.name} on 127.0.0.1:{self.pg.port} "
            f"({self.pg.base}), redis-server on 127.0.0.1:{self.redis.port}, gunicorn on 127.0.0.1:{self.web_port}; "
            f"migrated in {time.perf_counter() - started:.1f}s; files in {self.dir}")  # fmt: skip

    def ensure(self, *, web: bool = True, worker: bool = False) -> None:
        """Every service a scenario needs is running (an earlier scenario may have failed)."""
        if not self.pg.running():
            self.pg.start()
        if not self.redis.ping():
            self.redis.stop()
            self.redis.start()
        close_db()
        if web and (self.web is None or self.web.poll() is not None):
            self.start_web()
        if worker and (self.worker.proc is None or self.worker.proc.poll() is not None):
            self.worker.start()
        if not worker:
            self.worker.stop()

    def start_web(self) -> None:
        env = dict(self.env, LOG_LEVEL="WARNING")
        a = self.args
        opts = SimpleNamespace(port=self.web_port, workers=a.web_workers, threads=a.web_threads,
                               worker_class="gthread", profile=False)  # fmt: skip
        log = open(self.dir / "gunicorn.log", "ab")  # noqa: SIM115 - the child keeps it
        # start_server (bench/coups.py) passes no stdout: ours goes to the log through fd 1/2.
        saved = os.dup(1), os.dup(2)
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            self.web, _ = start_server(opts, env)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            log.close()

    def web_workers(self) -> list[int]:
        return children_of(self.web.pid) if self.web else []

    def down(self) -> None:
        for stop in (
            self._stop_web,
            self.worker.stop,
            self.redis.stop,
            lambda: self.pg.cleanup(self.args.keep),
        ):
            try:
                stop()
            except Exception as exc:  # keep cleaning up
                say(f"cleanup: {type(exc).__name__}: {exc}")
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            say(f"kept {self.dir} and {self.pg.base}")

    def _stop_web(self) -> None:
        if self.web is not None:
            with contextlib.suppress(ProcessLookupError):
                stop_server(self.web)
            self.web = None


def close_db() -> None:
    """Drop this process's database connections (stale after a PostgreSQL restart)."""
    from django.db import connections

    connections.close_all()


# --------------------------------------------------------------------------- the tablets


class FaultTablet(Tablet):
    """bench/coups.py's Tablet, patient and counting: a request cut off or answered 5xx is
    sent again with the SAME Idempotency-Key (and body) until a final answer arrives or
    `give_up_at` passes. Keeps every answer: statuses, replays, the coup id per key."""

    def __init__(self, table: dict, port: int, run: str, until: float, give_up_at: float, bettors: int = 3):
        super().__init__(table, port, run, until, bettors, trivial=False)
        self.give_up_at = give_up_at
        self.conn = self._connect()
        self.statuses: Counter = Counter()  # every HTTP answer, first tries and retries
        self.cut: Counter = Counter()  # requests that got no HTTP answer, by exception
        self.cut_spans: list[tuple[float, float]] = []  # (sent, cut) times of those
        self.retries = 0
        self.replays = 0  # answers with Idempotent-Replayed: true
        self.sent: list[str] = []  # coup keys, in order
        self.answered: dict[str, int] = {}  # coup key -> coup id of its 201
        self.conflicting: list[str] = []  # a key answered with two different coups
        self.bad_5xx: list[str] = []  # a 5xx that is not a clean 503 in the error shape
        self.timeline: list[tuple[float, str]] = []  # (time, "201" / "503" / "cut") of coup requests
        self.gave_up: list[str] = []

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)

    def request(self, method: str, path: str, body=None, key: str | None = None) -> tuple[int, dict, float]:
        headers = dict(self.headers)
        if key:
            headers["Idempotency-Key"] = key
        is_coup = path.endswith(RECORD_PATH_SUFFIX)
        if is_coup and key not in self.sent:
            self.sent.append(key)
        data = None if body is None else json.dumps(body)
        started = time.perf_counter()
        while True:
            attempt = time.time()
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
            except (http.client.HTTPException, OSError) as exc:
                self.cut[type(exc).__name__] += 1
                self.cut_spans.append((attempt, time.time()))
                if is_coup:
                    self.timeline.append((time.time(), "cut"))
                self.conn.close()
                self.conn = self._connect()
                self._pause(key, 0.2)
                continue
            status = response.status
            self.statuses[status] += 1
            try:
                answer = json.loads(raw) if raw else {}
            except ValueError:
                answer = {"raw": raw[:200].decode(errors="replace")}
            if is_coup:
                self.timeline.append((time.time(), str(status)))
            if status >= 500:
                if not clean_503(status, answer, response.getheader("Retry-After")):
                    self.bad_5xx.append(f"{method} {path}: {status} {str(answer)[:300]}")
                self._pause(key, 0.3)
                continue
            if response.getheader("Idempotent-Replayed") == "true":
                self.replays += 1
            if is_coup and status == 201:
                coup_id = answer["coup"]["id"]
                if self.answered.setdefault(key, coup_id) != coup_id:
                    self.conflicting.append(key)
            return status, answer, time.perf_counter() - started

    def _pause(self, key: str | None, seconds: float) -> None:
        if time.time() > self.give_up_at:
            self.gave_up.append(key or "?")
            raise GaveUp(key)
        self.retries += 1
        time.sleep(seconds)


class LossyTablet(FaultTablet):
    """Loses the first answer to each coup: sends the request, hangs up without reading, waits
    for the server to store its answer, then retries with the same key, as a tablet whose answer was lost
    in transit would. The retry must be a replay of the first answer, never a second coup."""

    def request(self, method: str, path: str, body=None, key: str | None = None) -> tuple[int, dict, float]:
        if path.endswith(RECORD_PATH_SUFFIX) and key not in self.sent:
            headers = dict(self.headers, **({"Idempotency-Key": key} if key else {}))
            conn = self._connect()
            conn.request(method, path, body=json.dumps(body), headers=headers)
            conn.close()  # the answer is never read
            self.lost += 1
            self._wait_stored(key)
        return super().request(method, path, body, key)

    @staticmethod
    def _wait_stored(key: str | None, seconds: float = 30.0) -> None:
        """Until the server has stored the lost answer under its key (or `seconds` pass): a fixed
        wait let a retry on a loaded machine reach the key first, run the coup itself and leave
        the lost request the replay (the server right, one coup per key, the count of replays
        off by one)."""
        from django.db import connection

        from floor.models import IdempotencyKey

        deadline = time.monotonic() + seconds
        try:
            while key and time.monotonic() < deadline:
                if IdempotencyKey.objects.filter(key=key, completed=True).exists():
                    return
                time.sleep(0.05)
        finally:
            connection.close()  # this tablet's thread's own connection

    lost = 0


def clean_503(status: int, body: dict, retry_after: str | None) -> bool:
    """A 503 in the API's error shape, code service_unavailable, with Retry-After."""
    error = body.get("error") if isinstance(body, dict) else None
    return (
        status == 503
        and isinstance(error, dict)
        and error.get("code") == "service_unavailable"
        and {"code", "message", "details"} <= set(error)
        and bool(retry_after)
    )


def run_tablets(
    tables: list[dict], port: int, run: str, seconds: float, retry_seconds: float
) -> list[FaultTablet]:
    until = time.time() + seconds
    tablets = [FaultTablet(t, port, run, until, until + retry_seconds) for t in tables]
    for tablet in tablets:
        tablet.start()
    return tablets


def join_tablets(tablets: list[FaultTablet], timeout: float) -> None:
    deadline = time.time() + timeout
    for tablet in tablets:
        tablet.join(max(0.1, deadline - time.time()))
    alive = [t for t in tablets if t.is_alive()]
    if alive:
        raise TimeoutError(f"{len(alive)} tablets still running after {timeout:.0f}s")


def tablet_totals(tablets: list[FaultTablet]) -> dict:
    answered: dict[str, int] = {}
    for t in tablets:
        answered.update(t.answered)
    return {
        "sent": [k for t in tablets for k in t.sent],
        "answered": answered,
        "conflicting": [k for t in tablets for k in t.conflicting],
        "statuses": sum((t.statuses for t in tablets), Counter()),
        "cut": sum((t.cut for t in tablets), Counter()),
        "cut_spans": [span for t in tablets for span in t.cut_spans],
        "retries": sum(t.retries for t in tablets),
        "replays": sum(t.replays for t in tablets),
        "bad_5xx": [b for t in tablets for b in t.bad_5xx],
        "gave_up": [k for t in tablets for k in t.gave_up],
        # Tablet.errors: answers >= 300 that were final (a business refusal) and exceptions.
        "errors": sum((t.errors for t in tablets), Counter()),
        "timeline": sorted(e for t in tablets for e in t.timeline),
    }


# --------------------------------------------------------------------------- the checks (pure)


def check_exactly_once(
    *, answered: dict[str, int], stored: dict[str, int], rows: set[int], conflicting: list[str]
) -> list[str]:
    """Problems with "every coup recorded exactly once".

    answered: key -> coup id of the 201 the client received; stored: key -> coup id of the
    201 answer the server stored for the key (every committed coup request has one); rows:
    the ids of the coups in the scenario's sessions."""  # fmt: skip
    problems = []
    if conflicting:
        problems.append(f"{len(conflicting)} keys answered with two different coups: {conflicting[:3]}")
    ids = list(answered.values())
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} coup ids answered to two keys")
    lost = sorted(set(ids) - rows)
    if lost:
        problems.append(f"{len(lost)} coups answered 201 but not in the database: {lost[:5]}")
    differ = sorted(k for k, i in answered.items() if stored.get(k) != i)
    if differ:
        problems.append(
            f"{len(differ)} keys whose stored answer is not the coup the client got: {differ[:3]}"
        )
    stored_ids = list(stored.values())
    if len(set(stored_ids)) != len(stored_ids):
        problems.append(f"{len(stored_ids) - len(set(stored_ids))} coups stored under two keys")
    orphans = sorted(rows - set(stored_ids))
    if orphans:
        problems.append(
            f"{len(orphans)} coup rows without the key that recorded them (duplicates?): {orphans[:5]}"
        )
    phantom = sorted(set(stored_ids) - rows)
    if phantom:
        problems.append(
            f"{len(phantom)} stored answers name coups that are not in the database: {phantom[:5]}"
        )
    return problems


def check_complete(coups: list[dict]) -> list[str]:
    """Problems with "no partial coup": each row {id, state, postings, postings_sum, bets}."""
    problems = []
    unsettled = [c["id"] for c in coups if c["state"] != "settled"]
    if unsettled:
        problems.append(f"{len(unsettled)} coups not settled: {unsettled[:5]}")
    unbalanced = [c["id"] for c in coups if c["postings_sum"] != 0]
    if unbalanced:
        problems.append(f"{len(unbalanced)} coups whose postings do not sum to zero: {unbalanced[:5]}")
    no_postings = [c["id"] for c in coups if c["postings"] < 2]
    if no_postings:
        problems.append(f"{len(no_postings)} coups without their postings: {no_postings[:5]}")
    no_bets = [c["id"] for c in coups if c["bets"] < 1]
    if no_bets:
        problems.append(f"{len(no_bets)} coups without bets: {no_bets[:5]}")
    return problems


def check_http(totals: dict) -> list[str]:
    """Problems on the wire: a 5xx that is not a clean 503, a request never answered, a
    refusal the tablet did not expect."""
    problems = []
    if totals["bad_5xx"]:
        problems.append(
            f"{len(totals['bad_5xx'])} answers 5xx other than a clean 503: {totals['bad_5xx'][:2]}"
        )
    if totals["gave_up"]:
        problems.append(
            f"{len(totals['gave_up'])} requests never got a final answer: {totals['gave_up'][:3]}"
        )
    if totals["errors"]:
        problems.append(f"tablet errors: {dict(totals['errors'].most_common(4))}")
    return problems


# --------------------------------------------------------------------------- the checks (database)


def database_figures(sessions: list[int], sent: list[str]) -> dict:
    from django.db.models import Count, Q, Sum

    from floor.models import IdempotencyKey
    from tables.models import Coup

    close_db()
    rows = list(
        Coup.objects.filter(session_id__in=sessions)
        .annotate(n_postings=Count("postings", distinct=True), n_bets=Count("bets", distinct=True))
        .values("id", "state", "n_postings", "n_bets")
    )
    sums = dict(
        Coup.objects.filter(session_id__in=sessions)
        .annotate(s=Sum("postings__amount"))
        .values_list("id", "s")
    )
    coups = [{"id": r["id"], "state": r["state"], "postings": r["n_postings"], "bets": r["n_bets"],
              "postings_sum": sums.get(r["id"]) or 0} for r in rows]  # fmt: skip
    stored = {}
    keys = IdempotencyKey.objects.filter(Q(key__in=sent), completed=True, status_code=201)
    for key, body in keys.values_list("key", "response_body"):
        stored[key] = body["coup"]["id"]
    return {"coups": coups, "rows": {c["id"] for c in coups}, "stored": stored}


def audit_ok() -> tuple[bool, str]:
    from audit.selectors import chain_verify

    close_db()
    result = chain_verify()
    return result.ok, f"{result.events_checked} events in {result.streams_checked} streams"


def coup_verdict(tables: list[dict], totals: dict) -> tuple[list[str], dict]:
    sessions = [t["session"] for t in tables]
    db = database_figures(sessions, totals["sent"])
    problems = check_exactly_once(answered=totals["answered"], stored=db["stored"], rows=db["rows"],
                                  conflicting=totals["conflicting"])  # fmt: skip
    problems += check_complete(db["coups"])
    problems += check_http(totals)
    ok, chain = audit_ok()
    if not ok:
        problems.append(f"the audit chain does not verify ({chain})")
    unanswered = set(totals["sent"]) - set(totals["answered"])
    figures = {
        "rows": len(db["rows"]),
        "answered": len(totals["answered"]),
        "committed_unanswered": len(unanswered & set(db["stored"])),
        "chain": chain,
    }
    return problems, figures


# --------------------------------------------------------------------------- helpers for a day


@dataclass
class Floor:
    run: str
    tables: list[dict]
    day: int
    commissario_token: str
    tablets: list[FaultTablet] = field(default_factory=list)


def seed_floor(n_tables: int) -> Floor:
    from django.contrib.auth import get_user_model

    from floor.authentication import issue_token
    from floor.models import GamingDay

    close_db()
    run = uuid.uuid4().hex[:8]
    tables = seed(n_tables, run)
    commissario, _ = issue_token(get_user_model().objects.get(username=f"bench-{run}-commissario"))
    day = GamingDay.objects.get(casino__code=f"bench-{run}", closed_at__isnull=True).pk
    return Floor(run=run, tables=tables, day=day, commissario_token=commissario)


def api(port: int, method: str, path: str, token: str | None = None, body=None, key: str | None = None,
        timeout: float = 30, conn: http.client.HTTPConnection | None = None) -> tuple[int, dict, float, dict]:  # fmt: skip
    """One request; on a fresh connection unless `conn` (kept open: the same web worker)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    if key:
        headers["Idempotency-Key"] = key
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.perf_counter()
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        if own:
            conn.close()
    try:
        answer = json.loads(raw) if raw else {}
    except ValueError:
        answer = {"raw": raw[:200].decode(errors="replace")}
    return response.status, answer, time.perf_counter() - started, dict(response.getheaders())


def close_day(
    port: int, floor: Floor, conn: http.client.HTTPConnection | None = None
) -> tuple[list[str], float]:
    """Close every session, then the day, as the Commissario over HTTP. Returns problems and
    the day close's duration."""
    problems = []
    for t in floor.tables:
        status, body, _, _ = api(port, "POST", f"/api/sessions/{t['session']}/close/", floor.commissario_token,
                                 key=f"faults:{floor.run}:close:{t['session']}", conn=conn)  # fmt: skip
        if status != 200:
            problems.append(f"session {t['session']} close: {status} {body}")
    status, body, seconds, _ = api(port, "POST", f"/api/gaming-days/{floor.day}/close/", floor.commissario_token,
                                   key=f"faults:{floor.run}:close-day", conn=conn)  # fmt: skip
    if status != 200:
        problems.append(f"day close: {status} {body}")
    return problems, seconds


def report_runs(log: str, day: int) -> int:
    """report_build runs of `day` that ended well in a worker's log (the result names the day)."""
    return sum(
        "audit.tasks.report_build[" in line and "succeeded in" in line and f"'gaming_day': {day}," in line
        for line in log.splitlines()
    )


def report_state(day: int) -> list[dict]:
    from audit.models import DayReport

    close_db()
    return list(
        DayReport.objects.filter(gaming_day_id=day).values("id", "version", "status", "task_id", "error")
    )


def report_checks(day: int, media: Path) -> tuple[list[str], str]:
    """One version-1 report, done, one file row per format, the files verify; leftovers in
    its directory are listed (not a failure: they are not report files)."""
    from audit.models import DayReport
    from audit.reports.services import report_verify

    close_db()
    problems = []
    reports = list(DayReport.objects.filter(gaming_day_id=day))
    if len(reports) != 1:
        return [f"{len(reports)} reports for the day (expected 1)"], ""
    report = reports[0]
    if report.status != DayReport.Status.DONE:
        return [f"report status {report.status} {report.error[:200]}"], ""
    files = list(report.files.values_list("format", "path"))
    formats = [f for f, _ in files]
    if len(files) != REPORT_FORMATS or len(set(formats)) != len(formats):
        problems.append(f"report files {formats} (expected one each of csv, xlsx, pdf)")
    verdict = report_verify(report=report)
    if not verdict["ok"]:
        problems.append(f"report_verify: {verdict['reasons']}")
    directory = {p.parent for _, p in ((f, media / path) for f, path in files)}
    on_disk = sorted(p.name for d in directory for p in d.iterdir()) if directory else []
    extra = [n for n in on_disk if n not in {Path(p).name for _, p in files}]
    note = f"report {report.pk}: {len(files)} files ({', '.join(sorted(formats))}), verify ok={verdict['ok']}"
    if extra:
        note += f"; leftovers in its directory: {extra}"
    return problems, note


def print_http(label: str, totals: dict) -> None:
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(totals["statuses"].items()))
    cut = ", ".join(f"{k}: {v}" for k, v in totals["cut"].most_common()) or "none"
    say(f"[{label}] answers by status {{{statuses}}}; requests cut without an answer: {cut}; "
        f"retries with the same key: {totals['retries']}; replays: {totals['replays']}")  # fmt: skip


# --------------------------------------------------------------------------- scenarios


def scenario_web(infra: Infra, args) -> tuple[bool, str]:
    infra.ensure(web=True, worker=False)
    floor = seed_floor(args.tablets + 1)
    lossy_table = floor.tables.pop()  # its own table: answers lost in transit, below
    say(f"[web] run {floor.run}: {args.tablets} tablets record coups for {args.seconds:.0f}s; SIGKILL to "
        f"{'one gunicorn worker' if args.web_kill == 'one' else 'every gunicorn worker'} at a random moment "
        f"(0.1-{args.kill_every:.1f}s) once coups are being answered again")  # fmt: skip
    start = time.time()
    tablets = run_tablets(floor.tables, infra.web_port, floor.run, args.seconds, args.retry_seconds)
    kills, kill_times = [], []
    recovered = []  # seconds from each kill to the next coup answered 201
    rng = random.Random(floor.run)
    wait_for(lambda: _coups_since(tablets, start) >= 2, 60, 0.05, "the first coups")
    mid = kill_mid_transaction(infra, floor, tablets)
    kill_times.append(mid["at"])
    kills.append((round(mid["at"] - start, 1), mid["pids"]))
    say(f"[web] SIGKILL to every web worker {mid['pids']} while {mid['blocked']} coup request(s) of table 1 "
        f"waited inside their transaction (written: xid {mid['xids']}) on the audit head this script locked; "
        f"their backends then ended: {mid['ended']}")  # fmt: skip
    last_kill = mid["at"]
    while True:
        # Kill only while coups are being answered (some since the last kill), a random moment
        # later: the kill then lands among requests in flight.
        served = wait_for(
            lambda since=last_kill: _coups_since(tablets, since) >= 2 or time.time() > start + args.seconds - 1,
            args.seconds + 30, 0.05, "the web workers to serve again",
        )  # fmt: skip
        first = _first_201_after(tablets, last_kill)
        if last_kill > start and first:
            recovered.append(first - last_kill)
        if time.time() > start + args.seconds - 1 or not served:
            break
        time.sleep(rng.uniform(0.1, args.kill_every))
        pids = infra.web_workers()
        if args.web_kill == "one" and pids:
            serving = [pid for pid in pids if _sockets(pid) >= 2] or pids
            pids = [rng.choice(serving)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        last_kill = time.time()
        kill_times.append(last_kill)
        kills.append((round(last_kill - start, 1), pids))
    join_tablets(tablets, args.seconds + args.retry_seconds + 30)
    # The other way to lose an answer after the commit: in transit. Deterministic replays.
    lossy = LossyTablet(lossy_table, infra.web_port, floor.run, time.time() + 60, time.time() + 90)
    for _ in range(3):
        lossy.one_coup()
    say(f"[web] a tablet hung up before reading {lossy.lost} coup answers, then retried each with its key: "
        f"{lossy.replays} replays, {len(lossy.answered)} coups")  # fmt: skip
    tablets.append(lossy)
    floor.tables.append(lossy_table)
    totals = tablet_totals(tablets)
    say(f"[web] {len(kills)} SIGKILLs ({sum(len(p) for _, p in kills)} worker processes) at "
        f"{[t for t, _ in kills]} s; the master forked new workers; coups answered again "
        f"{', '.join(f'{r:.1f}' for r in recovered)} s after each kill")  # fmt: skip
    print_http("web", totals)
    problems, fig = coup_verdict(floor.tables, totals)
    cut = sum(totals["cut"].values())
    # In flight: sent before a kill and cut after it (the others found a dead keep-alive
    # connection, or the listener's backlog while no worker served).
    in_flight = sum(any(sent < at <= cut_at for at in kill_times) for sent, cut_at in totals["cut_spans"])
    if not kills:
        problems.append("no kill happened")
    if in_flight == 0:
        problems.append("no request in flight was cut by a kill: the scenario proved nothing")
    if lossy.replays != lossy.lost or len(lossy.answered) != lossy.lost:
        problems.append(
            f"{lossy.lost} answers lost in transit gave {lossy.replays} replays and {len(lossy.answered)} coups"
        )
    if not mid["blocked"] or mid["ended"] != "rolled back (client gone)":
        problems.append(f"the kill inside a transaction: {mid}")
    summary = (
        f"{len(kills)} SIGKILL rounds on web workers cut {in_flight} requests in flight ({cut} cut in all), one "
        f"round with {mid['blocked']} coup transaction(s) half-written, rolled back; {fig['answered']} coups answered 201, "
        f"{fig['rows']} coup rows, {totals['replays']} answers replayed ({lossy.replays} after answers lost in transit, "
        f"{totals['replays'] - lossy.replays} after a kill between a commit and its answer), "
        f"{fig['committed_unanswered']} committed keys never answered; 5xx other than 503: {len(totals['bad_5xx'])}; "
        f"every coup settled and balanced; audit chain {fig['chain']}"
    )
    return _verdict(problems, summary)


def kill_mid_transaction(infra: Infra, floor: Floor, tablets: list[FaultTablet]) -> dict:
    """A kill that certainly lands inside a coup's transaction: hold table 1's audit stream
    head (SELECT FOR UPDATE), so its next coup request waits with its key row and coup rows
    written but uncommitted; SIGKILL every web worker; let go. PostgreSQL must roll that
    transaction back, and the tablet's retry with the same key records the coup once."""
    import psycopg

    params = {"host": "127.0.0.1", "port": infra.pg.port, "user": "postgres", "dbname": "chemin_faults"}
    stream = f"table_session:{floor.tables[0]['session']}"
    with psycopg.connect(**params, autocommit=True) as watch, psycopg.connect(**params) as holder:
        holder.execute("SELECT 1 FROM audit_auditstream WHERE name = %s FOR UPDATE", (stream,))
        me = holder.info.backend_pid

        def waiting():
            return watch.execute(
                "SELECT pid, backend_xid::text FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (me,),
            ).fetchall()

        blocked = wait_for(waiting, 30, 0.05, "a coup request waiting on the audit head")
        pids = infra.web_workers()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        at = time.time()
        time.sleep(0.3)
        holder.rollback()
        backends = [b for b, _ in blocked]

        def gone():
            rows = watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (backends,)
            ).fetchone()
            return rows[0] == 0

        try:
            wait_for(gone, 15, 0.05, "the killed requests' backends to end")
            ended = "rolled back (client gone)"
        except TimeoutError:
            ended = "STILL THERE after 15s"
    return {"pids": pids, "at": at, "blocked": len(blocked), "xids": [x for _, x in blocked], "ended": ended}


def _sockets(pid: int) -> int:
    """Sockets a process holds: a gunicorn worker that has served holds its database and client
    connections besides the inherited listener, one still booting only the listener."""
    try:
        return sum(
            os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:") for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return 0


def _coups_since(tablets: list[FaultTablet], since: float) -> int:
    return sum(1 for t in tablets for at, status in list(t.timeline) if at > since and status == "201")


def _first_201_after(tablets: list[FaultTablet], since: float) -> float | None:
    times = [at for t in tablets for at, status in list(t.timeline) if at > since and status == "201"]
    return min(times) if times else None


def scenario_redis(infra: Infra, args) -> tuple[bool, str]:
    infra.ensure(web=True, worker=True)
    floor = seed_floor(args.tablets)
    other = seed_floor(1)  # an idle day, closed once Redis is back
    up_first = args.seconds / 3
    say(f"[redis] run {floor.run}: {args.tablets} tablets record for {args.seconds:.0f}s; redis-server is "
        f"stopped at {up_first:.0f}s and stays down until the day is closed")  # fmt: skip
    start = time.time()
    tablets = run_tablets(floor.tables, infra.web_port, floor.run, args.seconds, args.retry_seconds)
    time.sleep(max(0.0, start + up_first - time.time()))
    infra.redis.stop()
    down_at = time.time()
    say(f"[redis] redis-server stopped at {down_at - start:.1f}s (ping: {infra.redis.ping()})")
    join_tablets(tablets, args.seconds + args.retry_seconds + 30)
    totals = tablet_totals(tablets)
    during = Counter(s for t, s in totals["timeline"] if t >= down_at)
    print_http("redis", totals)
    say(f"[redis] coup answers while Redis was down: {dict(during)}")
    problems = []
    if during.get("201", 0) == 0:
        problems.append("no coup was recorded while Redis was down")
    if any(s.startswith("5") for s in during):
        problems.append(f"the coup path answered 5xx while Redis was down: {dict(during)}")
    # Still down: the probes, a login, and the close of the day.
    ready, body, _, _ = api(infra.web_port, "GET", "/readyz")
    redis_check = body.get("checks", {}).get("redis") if isinstance(body, dict) else body
    login, login_body, login_s, _ = api(infra.web_port, "POST", "/api/auth/token/",
                                        body={"username": f"bench-{floor.run}-capo-1", "password": "x" * 12})  # fmt: skip
    login_code = login_body.get("error", {}).get("code", "") if isinstance(login_body, dict) else ""
    say(f"[redis] with Redis down: /readyz {ready} (redis {redis_check}); a token login answers {login} "
        f"{login_code} in {login_s * 1000:.0f} ms")  # fmt: skip
    if login >= 500 and not (login == 503 and login_code == "service_unavailable"):
        problems.append(f"a login answers {login} {login_code} while Redis is down (not a clean 503)")
    # One keep-alive connection for both closes: the web worker that failed to enqueue during
    # the outage is the one that must enqueue once Redis is back.
    desk = http.client.HTTPConnection("127.0.0.1", infra.web_port, timeout=30)
    close_problems, close_s = close_day(infra.web_port, floor, conn=desk)
    desk_sock = desk.sock
    problems += close_problems
    reports_meanwhile = report_state(floor.day)
    say(f"[redis] sessions and day closed while Redis was down (day close {close_s * 1000:.0f} ms); "
        f"reports of the day meanwhile: {reports_meanwhile or 'none'}")  # fmt: skip
    if close_s > 5:
        problems.append(f"the day close took {close_s:.1f}s with Redis down")
    infra.redis.start()
    back_at = time.time()
    # The web processes enqueue again by themselves: a second day closed now gets its report
    # without any sweep.
    other_problems, other_s = close_day(infra.web_port, other, conn=desk)
    same_worker = desk.sock is desk_sock and desk_sock is not None
    desk.close()
    problems += other_problems
    try:
        wait_for(lambda: any(r["status"] == "done" for r in report_state(other.day)), args.report_timeout, 0.5,
                 "the report of a day closed after Redis came back")  # fmt: skip
        worker = "the same web worker" if same_worker else "maybe another web worker"
        other_note = (
            f"a day closed after Redis came back got its report directly ({other_s * 1000:.0f} ms close, "
            f"by {worker} as the close during the outage)"
        )
    except TimeoutError as exc:
        problems.append(f"{exc}; reports: {report_state(other.day)}")
        other_note = "a day closed after Redis came back got NO report"
    say(f"[redis] redis-server started again after {back_at - down_at:.1f}s down; {other_note}")
    missing_before = report_state(floor.day)
    say(f"[redis] the day closed during the outage has reports {missing_before or 'none'}; sending "
        "audit.tasks.reports_sweep through the broker (what beat does every 15 minutes)")  # fmt: skip
    from config.celery import app as celery_app

    swept_at = time.time()
    sweep = celery_app.send_task("audit.tasks.reports_sweep")
    try:
        wait_for(lambda: any(r["status"] == "done" for r in report_state(floor.day)), args.report_timeout, 0.5,
                 "the report after Redis came back")  # fmt: skip
        built_after = time.time() - swept_at
    except TimeoutError as exc:
        problems.append(f"{exc}; reports: {report_state(floor.day)}")
        built_after = None
    with contextlib.suppress(Exception):
        say(f"[redis] reports_sweep enqueued the reports [day, version] {sweep.get(timeout=5)}")
    time.sleep(2)  # a second run would show now
    runs = report_runs(infra.worker.text(), floor.day)
    if runs != 1:
        problems.append(f"report_build ran {runs} times for the day (expected 1)")
    report_problems, report_note = report_checks(floor.day, infra.dir / "media")
    problems += report_problems
    coup_problems, fig = coup_verdict(floor.tables, totals)
    problems += coup_problems
    built = f"built {built_after:.1f}s after the sweep" if built_after is not None else "NOT built"
    summary = (
        f"{during.get('201', 0)} coups answered 201 while Redis was down ({fig['answered']} in all, {fig['rows']} "
        f"rows), 5xx on the coup path: {sum(v for s, v in during.items() if s.startswith('5'))}; login "
        f"{login} {login_code}; day closed with Redis down in {close_s * 1000:.0f} ms, no report enqueued; "
        f"once Redis was back: report {built} ({runs} run); {report_note}; {other_note}; audit chain {fig['chain']}"
    )
    return _verdict(problems, summary)


def scenario_worker(infra: Infra, args) -> tuple[bool, str]:
    infra.ensure(web=True, worker=True)
    floor = seed_floor(args.tablets)
    say(
        f"[worker] run {floor.run}: {args.tablets} tablets record for {args.seconds:.0f}s, then the day is closed"
    )
    tablets = run_tablets(floor.tables, infra.web_port, floor.run, args.seconds, args.retry_seconds)
    join_tablets(tablets, args.seconds + args.retry_seconds + 30)
    totals = tablet_totals(tablets)
    problems, close_s = close_day(infra.web_port, floor)
    say(f"[worker] {len(totals['answered'])} coups; day {floor.day} closed in {close_s * 1000:.0f} ms; waiting "
        "for the worker to start the report")  # fmt: skip
    started = wait_for(lambda: [r for r in report_state(floor.day) if r["task_id"]], 60, 0.02,
                       "the report build to start")[0]  # fmt: skip
    time.sleep(args.kill_delay)
    before = report_state(floor.day)[0]
    pids = infra.worker.kill9()
    killed_at = time.time()
    say(f"[worker] SIGKILL to the worker's process group {pids} {args.kill_delay:.2f}s into the build "
        f"of task {started['task_id']}; report status at the kill: {before['status']}")  # fmt: skip
    if before["status"] == "done":
        problems.append("the report was done before the kill (make the day bigger: --seconds)")
    r = infra.redis.client()
    unacked, queued = r.hlen("unacked"), r.llen("celery")
    say(f"[worker] in Redis after the kill: {unacked} unacked message(s), {queued} queued")
    if unacked != 1:
        problems.append(
            f"{unacked} unacked messages after the kill (expected the report's, held for redelivery)"
        )
    wait_s = max(0.0, killed_at + args.visibility_timeout + 1 - time.time())
    say(f"[worker] restarting the worker after the visibility timeout ({args.visibility_timeout}s, "
        f"CELERY_VISIBILITY_TIMEOUT): waiting {wait_s:.0f}s")  # fmt: skip
    time.sleep(wait_s)
    infra.worker.start()
    restarted_at = time.time()
    try:
        wait_for(lambda: report_state(floor.day)[0]["status"] == "done", args.report_timeout, 0.5,
                 "the report after the worker restart")  # fmt: skip
        done_after = time.time() - restarted_at
    except TimeoutError as exc:
        problems.append(f"{exc}: {report_state(floor.day)}")
        done_after = None
    time.sleep(2)  # a duplicate delivery would show now
    after = report_state(floor.day)
    log = infra.worker.text()
    received = log.count(f"audit.tasks.report_build[{started['task_id']}] received")
    runs = sum("audit.tasks.report_build[" in line for line in log.splitlines())
    succeeded = report_runs(log, floor.day)
    unacked, queued = r.hlen("unacked"), r.llen("celery")
    r.close()
    say(f"[worker] after the restart: report rows {after}; worker log: the task received {received}x, "
        f"report_build lines {runs}, succeeded {succeeded}x; Redis: {unacked} unacked, {queued} queued")  # fmt: skip
    if received != 1:
        problems.append(f"the redelivered task was received {received} times by the new worker (expected 1)")
    if succeeded != 1:
        problems.append(f"report_build succeeded {succeeded} times after the restart (expected 1)")
    if unacked or queued:
        problems.append(f"Redis still holds {unacked} unacked / {queued} queued messages")
    if after and after[0]["task_id"] != started["task_id"]:
        problems.append(
            f"the report was built by task {after[0]['task_id']}, not the redelivered {started['task_id']}"
        )
    report_problems, note = report_checks(floor.day, infra.dir / "media")
    problems += report_problems
    coup_problems, fig = coup_verdict(floor.tables, totals)
    problems += coup_problems
    summary = (
        f"worker killed {args.kill_delay:.2f}s into the report; message held unacked, redelivered to the "
        f"restarted worker (same task id) and built "
        f"{'NEVER' if done_after is None else f'in {done_after:.1f}s'} after the restart; {len(after)} "
        f"report row(s), task run {succeeded}x after the restart; {note}; {fig['rows']} coups intact"
    )
    return _verdict(problems, summary)


def scenario_postgres(infra: Infra, args) -> tuple[bool, str]:
    infra.ensure(web=True, worker=False)
    floor = seed_floor(args.tablets)
    stop_at = args.seconds / 3
    say(f"[postgres] run {floor.run}: {args.tablets} tablets record for {args.seconds:.0f}s; PostgreSQL is stopped "
        f"(-m {args.pg_stop_mode}) at {stop_at:.0f}s and started {args.pg_down:.0f}s later")  # fmt: skip
    start = time.time()
    tablets = run_tablets(floor.tables, infra.web_port, floor.run, args.seconds, args.retry_seconds)
    time.sleep(max(0.0, start + stop_at - time.time()))
    infra.pg.stop(args.pg_stop_mode)
    down_at = time.time()
    time.sleep(args.pg_down)
    infra.pg.start()
    up_at = time.time()
    say(f"[postgres] down from {down_at - start:.1f}s to {up_at - start:.1f}s (start with recovery "
        f"included)")  # fmt: skip
    join_tablets(tablets, args.seconds + args.retry_seconds + 30)
    totals = tablet_totals(tablets)
    print_http("postgres", totals)
    during = Counter(s for t, s in totals["timeline"] if down_at <= t < up_at + 0.5)
    after = Counter(s for t, s in totals["timeline"] if t >= up_at + 0.5)
    say(f"[postgres] coup answers during the outage: {dict(during)}; after it: {dict(after)}")
    problems, fig = coup_verdict(floor.tables, totals)
    n503 = totals["statuses"].get(503, 0)
    if n503 == 0:
        problems.append("no 503 was seen: the outage did not reach the clients")
    if after.get("201", 0) == 0:
        problems.append("no coup was recorded after PostgreSQL came back")
    cut = sum(totals["cut"].values())
    summary = (
        f"{n503} clean 503s (service_unavailable, Retry-After), {len(totals['bad_5xx'])} other 5xx, {cut} "
        f"connections cut; {after.get('201', 0)} coups answered 201 after the restart; {fig['answered']} answered, "
        f"{fig['rows']} rows, {totals['replays']} replays, {fig['committed_unanswered']} committed unanswered; no "
        f"partial coup (all settled, postings sum to 0); audit chain {fig['chain']}"
    )
    return _verdict(problems, summary)


def _verdict(problems: list[str], summary: str) -> tuple[bool, str]:
    if problems:
        return False, "; ".join(problems) + " || " + summary
    return True, summary


SCENARIO_FUNCS = {"web": scenario_web, "redis": scenario_redis, "worker": scenario_worker,
                  "postgres": scenario_postgres}  # fmt: skip


def _alarm(signum, frame):
    raise ScenarioTimeout()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", default="all", choices=("all", *SCENARIOS))
    parser.add_argument("--tablets", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=12, help="recording time per scenario (default 12)")
    parser.add_argument(
        "--retry-seconds",
        type=float,
        default=30,
        help="how long after the recording a tablet keeps retrying one request (default 30)",
    )
    parser.add_argument("--web-kill", default="one", choices=("one", "all"),
                        help="web: SIGKILL one gunicorn worker per round (default) or all of them")  # fmt: skip
    parser.add_argument("--kill-every", type=float, default=2.5, help="web: seconds between kill rounds")
    parser.add_argument(
        "--kill-delay", type=float, default=0.3, help="worker: seconds into the build before the kill"
    )
    parser.add_argument(
        "--visibility-timeout", type=int, default=10, help="worker: CELERY_VISIBILITY_TIMEOUT"
    )
    parser.add_argument("--pg-down", type=float, default=3, help="postgres: seconds stopped")
    parser.add_argument("--pg-stop-mode", default="immediate", choices=("immediate", "fast"))
    parser.add_argument("--report-timeout", type=float, default=90)
    parser.add_argument("--scenario-timeout", type=float, default=180)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=4)
    parser.add_argument("--pg-port", type=int, default=0, help="0 (default): any free loopback port")
    parser.add_argument("--redis-port", type=int, default=0)
    parser.add_argument("--web-port", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the temp directories (logs, report files)")
    args = parser.parse_args(argv)
    names = SCENARIOS if args.scenario == "all" else (args.scenario,)

    infra = Infra(args)
    results: dict[str, tuple[bool, str]] = {}
    began = time.perf_counter()
    previous = {s: signal.signal(s, _terminate) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        infra.up()
        for name in names:
            say(f"\n=== scenario {name}")
            signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(int(args.scenario_timeout))
            t0 = time.perf_counter()
            try:
                results[name] = SCENARIO_FUNCS[name](infra, args)
            except ScenarioTimeout:
                results[name] = (False, f"timed out after {args.scenario_timeout:.0f}s")
            except Exception as exc:
                traceback.print_exc()
                results[name] = (False, f"{type(exc).__name__}: {exc}")
            finally:
                signal.alarm(0)
            ok, text = results[name]
            say(f"{'PASS' if ok else 'FAIL'} {name} ({time.perf_counter() - t0:.0f}s): {text}")
    finally:
        infra.down()
        for s, handler in previous.items():
            signal.signal(s, handler)
    say(f"\n{sum(ok for ok, _ in results.values())}/{len(names)} scenarios passed in "
        f"{time.perf_counter() - began:.0f}s")  # fmt: skip
    for name in names:
        ok, _ = results.get(name, (False, ""))
        say(f"  {'PASS' if ok else 'FAIL'} {name}")
    return 0 if len(results) == len(names) and all(ok for ok, _ in results.values()) else 1


def _terminate(signum, frame):
    raise SystemExit(f"terminated by signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
