"""Load run of Chemin (issue #8, point 6; run by hand, never in the test suite).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chemin_bench_load \\
        .venv/bin/python bench/load.py --tablets 16 --minutes 10 --window 60

NOTE: this WRITES to the database named by DATABASE_URL (default: chemin_bench_load on the
local PostgreSQL; created and migrated if absent) and uses the Redis database of REDIS_URL
(default redis://127.0.0.1:6379/14, apart from the tests) as the Celery broker. Each run seeds
its own casinos, so runs never collide. Report files go to a temporary directory, removed at
the end.

What it does, with the pieces of bench/coups.py (seed, start_server, stop_server, Tablet):
1. seeds K venezia tables as bench/coups.py does, and two more casinos, each with one
   synthesized gaming day of --report-coups coups on --report-tables tables (bench/report.py's
   synthesize writes the day closed, so it is reopened here, to be closed through the service);
2. serves the app with gunicorn (--workers x --threads, as bench/coups.py) and starts a real
   Celery worker (celery -A config worker --concurrency 1), both on that database and Redis;
   closes the first extra day and waits for the worker to build its report (the warm-up: the
   worker's first report imports the exporters and raises its RSS once by some 20-30 MB, a
   step that is not a leak; --no-warmup-report leaves it in the figures);
3. K tablet threads record whole coups (one-shot endpoint, a unique Idempotency-Key each)
   without pause for --minutes; every --window seconds it prints coups/s, p50/p95/p99 latency,
   errors, the tablets still running, and the RSS (VmRSS) of each gunicorn worker and of the
   Celery worker and its pool process;
4. at half time it closes the other day with floor.services.gaming_day_close (which
   enqueues the report on commit) and follows its DayReport in the database until the worker
   has built it, printing how long that took, while the tablets keep going;
5. at the end: the exactly-once check (every coup answered 201 is in the database once, rows =
   successful answers, keys unique and stored), the report built exactly once (one row, done,
   three files, one report.built audit event, by the worker), p95 of the first window against
   the last, RSS of each process at the end of the first window against the last, the errors,
   and one PASS/FAIL line per target. Exit status 1 on any FAIL.

Targets: no error; no lost or doubled coup; the report built once, by the worker, during the
load; p95 of the last window at most --p95-tolerance (20%) above the first; every process's
RSS at the end of the last window at most --rss-tolerance (10%) above the end of the first.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

from bench.coups import Tablet, ensure_database, seed, start_server, stop_server  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/chemin_bench_load"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"


def say(*parts: object) -> None:
    print(*parts, flush=True)


# --------------------------------------------------------------------------- tablets with timestamps


class _Stamped(list):
    """A list that also keeps the time of each append (stamps[i] goes with self[i]).

    The stamp is appended first, so a reader that takes n = len(self) finds stamps[:n]."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[float] = []

    def append(self, value) -> None:
        self.stamps.append(time.time())
        super().append(value)


class LoadTablet(Tablet):
    """bench/coups.py's Tablet, with the time of each coup latency and of each coup recorded."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(getattr(self, "latencies", None), list) or not isinstance(
            getattr(self, "coup_ids", None), list
        ):
            raise SystemExit("bench/coups.py's Tablet no longer keeps .latencies and .coup_ids lists")
        self.latencies = _Stamped()  # every coup request, answered 2xx or not (as figures() counts)
        self.coup_ids = _Stamped()  # the coups answered 201


class Cursor:
    """Reads, window after window, the entries of a _Stamped list up to a time."""

    def __init__(self, items: _Stamped):
        self.items, self.at = items, 0

    def take(self, until: float | None) -> list:
        n = len(self.items)
        out = []
        while self.at < n and (until is None or self.items.stamps[self.at] < until):
            out.append(self.items[self.at])
            self.at += 1
        return out


def quantiles(lat: list[float]) -> list[float]:
    """p1..p99 as bench/coups.py's figures() computes them."""
    if len(lat) >= 2:
        return statistics.quantiles(sorted(lat), n=100, method="inclusive")
    return [max(lat or [0.0])] * 99


# --------------------------------------------------------------------------- processes and memory


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        return []
    return sorted(set(out))


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def processes(gunicorn_pid: int, celery_pid: int) -> dict[str, int]:
    """label -> pid: each gunicorn worker, the Celery worker and its pool process(es)."""
    out = {f"web {pid}": pid for pid in children(gunicorn_pid)}
    out[f"celery {celery_pid}"] = celery_pid
    for pid in children(celery_pid):
        out[f"celery-pool {pid}"] = pid
    return out


def start_worker(env: dict, log_path: Path) -> subprocess.Popen:
    cmd = [str(ROOT / ".venv" / "bin" / "celery"), "-A", "config", "worker", "-l", "warning", "--concurrency", "1",
           "--hostname", f"chemin-load-{os.getpid()}@%h"]  # fmt: skip
    log = open(log_path, "wb")  # noqa: SIM115 (the worker writes it until stop_worker)
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()
    from config.celery import app

    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the Celery worker exited ({proc.returncode}); its log:\n{tail(log_path)}")
        if any(name.startswith(f"chemin-load-{os.getpid()}@") for reply in app.control.ping(timeout=1.0)
               for name in reply):  # fmt: skip
            return proc
    stop_worker(proc)
    raise SystemExit(f"the Celery worker did not answer a ping within 60 s; its log:\n{tail(log_path)}")


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # the group we started (start_new_session): warm shutdown
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def queue_length(redis_url: str) -> int:
    import redis

    return redis.Redis.from_url(redis_url).llen("celery")


# --------------------------------------------------------------------------- the report in the middle


def report_prepare(label: str, coups: int, tables: int) -> int:
    """Another casino with one day of `coups` synthesized coups, reopened so that it can be
    closed through the service. Returns the day's id."""
    import io

    from bench.report import synthesize
    from floor.models import GamingDay

    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # its own progress line
        day_id = synthesize(coups, tables)
    # synthesize() writes the day closed; here it is closed as the Commissario would close it.
    GamingDay.objects.filter(pk=day_id).update(closed_at=None, closed_by=None)
    say(f"{label} day {day_id}: {coups:,} coups on {tables} tables synthesized in "
        f"{time.perf_counter() - started:.1f}s (a casino of its own, same database)")  # fmt: skip
    return day_id


def report_follow(label: str, day_id: int, by, state: SimpleNamespace, t0: float, deadline: float) -> None:
    """Close the day through the service (the report is enqueued on commit), then poll the
    DayReport until the worker has built it. Runs in its own thread, with its own connection."""
    from django.db import connection

    from audit.models import DayReport
    from floor.models import GamingDay
    from floor.services import gaming_day_close

    try:
        gaming_day_close(gaming_day=GamingDay.objects.get(pk=day_id), by=by)
        state.closed = time.time()
        say(f"  {label}: day {day_id} closed at +{state.closed - t0:.1f}s; following its report")
        seen = None
        while time.time() < deadline and not state.abandon:
            row = (
                DayReport.objects.filter(gaming_day_id=day_id, version=1).values("status", "task_id").first()
            )
            status = row["status"] if row else "queued"
            if status != seen:
                seen = status
                if status == DayReport.Status.PENDING:
                    state.started = time.time()
                    say(f"  {label}: the worker started it at +{state.started - t0:.1f}s")
            if status in (DayReport.Status.DONE, DayReport.Status.FAILED):
                state.finished, state.status = time.time(), status
                report = DayReport.objects.get(gaming_day_id=day_id, version=1)
                state.seconds, state.error, state.task_id = report.seconds, report.error, report.task_id
                say(f"  {label}: {status} at +{state.finished - t0:.1f}s, {state.finished - state.closed:.1f}s "
                    f"after the close (build {report.seconds or 0:.1f}s)"
                    + (f": {report.error}" if report.error else ""))  # fmt: skip
                return
            time.sleep(0.25)
        state.status = "timeout"
    except Exception as exc:  # reported as a failure of the report target, never silent
        state.status, state.error = "exception", f"{type(exc).__name__}: {exc}"
        say(f"  {label}: FAILED {state.error}")
    finally:
        connection.close()


def report_check(day_id: int) -> tuple[bool, str]:
    from audit.models import AuditEvent, DayReport, ReportFile
    from audit.reports.services import reports_stream

    reports = list(DayReport.objects.filter(gaming_day_id=day_id))
    files = ReportFile.objects.filter(report__gaming_day_id=day_id)
    built = AuditEvent.objects.filter(stream__name=reports_stream(day_id), action="report.built").count()
    by_worker = len(reports) == 1 and bool(reports[0].task_id)
    ok = (len(reports) == 1 and reports[0].status == DayReport.Status.DONE and files.count() == 3 and built == 1
          and by_worker)  # fmt: skip
    sizes = ", ".join(f"{f.format} {f.size / 1e6:.2f} MB" for f in files.order_by("format"))
    return ok, (f"{len(reports)} report row(s) ({', '.join(r.status for r in reports) or 'none'}), "
                f"{files.count()} files ({sizes or '-'}), {built} report.built event(s), "
                f"task id {'set: built by the worker' if by_worker else 'MISSING'}")  # fmt: skip


# --------------------------------------------------------------------------- the exactly-once check


def exactly_once(tables: list[dict], tablets: list[LoadTablet]) -> tuple[bool, str]:
    from floor.models import IdempotencyKey
    from tables.models import Coup

    ids = [i for t in tablets for i in t.coup_ids]
    keys = [k for t in tablets for k in t.keys]
    rows = Coup.objects.filter(session_id__in=[t["session"] for t in tables])
    row_ids = set(rows.values_list("pk", flat=True))
    stored = 0
    for i in range(0, len(keys), 5000):  # bounded IN lists
        stored += IdempotencyKey.objects.filter(key__in=keys[i : i + 5000]).count()
    exact = len(row_ids) == len(ids) == len(set(ids)) and row_ids == set(ids)
    unique_keys = len(keys) == len(set(keys)) == stored
    settled = not rows.exclude(state="settled").exists()
    return exact and unique_keys and settled, (
        f"{len(row_ids)} coup rows, {len(ids)} successful answers, {len(set(ids))} distinct ids: "
        f"{'exactly once' if exact else 'MISMATCH'}; {stored} stored keys for {len(keys)} sent: "
        f"{'unique' if unique_keys else 'MISMATCH'}; every coup settled: {settled}"
    )


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tablets", type=int, default=16)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--window", type=float, default=60, help="seconds per printed window (default 60)")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes (default 3)")
    parser.add_argument("--threads", type=int, default=6, help="threads per worker (default 6)")
    parser.add_argument("--worker-class", default="gthread", choices=("gthread", "sync"))
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--bettors", type=int, default=3, help="at most this many bettors per coup")
    parser.add_argument(
        "--report-coups", type=int, default=10_000, help="coups of the day closed at half time"
    )
    parser.add_argument("--report-tables", type=int, default=10)
    parser.add_argument(
        "--warmup-report", action=argparse.BooleanOptionalAction, default=True,
        help="have the worker build a report of the same size before the load (default on; see the docstring)",
    )  # fmt: skip
    parser.add_argument("--report-grace", type=float, default=300,
                        help="seconds to wait for the report after the load ends (default 300)")  # fmt: skip
    parser.add_argument("--p95-tolerance", type=float, default=20, help="percent (default 20)")
    parser.add_argument("--rss-tolerance", type=float, default=10, help="percent (default 10)")
    args = parser.parse_args()
    args.profile = False  # start_server's cProfile option: not under load
    duration = args.minutes * 60
    if args.window <= 0 or duration < 2 * args.window:
        parser.error("--minutes must cover at least two windows (first and last are compared)")
    n_windows = math.ceil(duration / args.window - 1e-9)

    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    redis_url = os.environ.get("REDIS_URL") or DEFAULT_REDIS
    media = Path(tempfile.mkdtemp(prefix="chemin-load-media-"))
    # This process closes the day: it must enqueue to the worker's broker, never run eagerly.
    os.environ.update({"DATABASE_URL": url, "REDIS_URL": redis_url, "DJANGO_DEBUG": "0",
                       "CELERY_TASK_ALWAYS_EAGER": "0", "CHEMIN_MEDIA_ROOT": str(media)})  # fmt: skip
    ensure_database(url)
    try:
        queued = queue_length(redis_url)
    except Exception as exc:
        raise SystemExit(f"Redis at {redis_url} does not answer: {exc}") from exc

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    run = uuid.uuid4().hex[:8]
    started = time.perf_counter()
    tables = seed(args.tablets, run)
    say(f"run {run}: seeded {len(tables)} tables in {time.perf_counter() - started:.1f}s; gunicorn {args.workers} "
        f"{args.worker_class} workers x {args.threads} threads; 1 Celery worker (concurrency 1); "
        f"{os.cpu_count()} cores; database {url.rsplit('/', 1)[1]}, broker {redis_url}")  # fmt: skip
    from floor.roles import Role
    from tests.factories import UserFactory

    closer = UserFactory(username=f"bench-{run}-report-commissario", roles=[Role.COMMISSARIO])
    warm_id = (
        report_prepare("warm-up report", args.report_coups, args.report_tables)
        if args.warmup_report
        else None
    )
    day_id = report_prepare("report", args.report_coups, args.report_tables)
    if queued:
        say(f"WARNING: {queued} task(s) already waiting in the broker's queue; the worker runs them first")
    connection.close()

    # Production-like: the web has Redis too (cache, broker), as in the compose file.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "DJANGO_DEBUG": "0",
           "DATABASE_URL": url, "DATABASE_CONN_MAX_AGE": "600", "LOG_LEVEL": "WARNING",
           "REDIS_URL": redis_url, "CELERY_TASK_ALWAYS_EAGER": "0", "CHEMIN_MEDIA_ROOT": str(media)}  # fmt: skip
    worker_log = media.parent / f"{media.name}-celery.log"
    server = worker = None
    tablets: list[LoadTablet] = []
    state = SimpleNamespace(closed=None, started=None, finished=None, status="not started", seconds=None,
                            error="", task_id="", abandon=False)  # fmt: skip
    windows: list[dict] = []
    reporter = None
    try:
        server, _ = start_server(args, env)
        worker = start_worker(env, worker_log)
        say(f"gunicorn master {server.pid}, workers {children(server.pid)}; Celery worker {worker.pid}, "
            f"pool {children(worker.pid)}; log {worker_log}")  # fmt: skip
        if warm_id is not None:
            # The worker's first report imports the exporters and grows its heap once (about 20-30 MB):
            # a step, not a leak. Built before the load, the RSS of the first window includes it, so the
            # memory target sees what the report in the middle leaves behind.
            before = {pid: rss_mb(pid) for pid in children(worker.pid)}
            warm = SimpleNamespace(closed=None, started=None, finished=None, status="not started", seconds=None,
                                   error="", task_id="", abandon=False)  # fmt: skip
            report_follow(
                "warm-up report", warm_id, closer, warm, time.time(), time.time() + args.report_grace
            )
            if warm.status != "done":
                raise SystemExit(
                    f"the warm-up report did not build: {warm.status} {warm.error}\n{tail(worker_log)}"
                )
            say(
                "  warm-up report: Celery pool RSS "
                + ", ".join(
                    f"{pid} {(before.get(pid) or 0):.1f} -> {(rss_mb(pid) or 0):.1f} MB"
                    for pid in children(worker.pid)
                )
            )
        say(f"load: {args.tablets} tablets for {duration:.0f}s, windows of {args.window:.0f}s, "
            f"the report closed at +{duration / 2:.0f}s\n")  # fmt: skip

        t0 = time.time()
        until = t0 + duration
        tablets = [LoadTablet(t, args.port, run, until, args.bettors, False) for t in tables]
        for tablet in tablets:
            tablet.start()
        lat_cursors = [Cursor(t.latencies) for t in tablets]
        coup_cursors = [Cursor(t.coup_ids) for t in tablets]
        errors_before = 0
        for k in range(n_windows):
            w_start, w_end = t0 + k * args.window, min(t0 + (k + 1) * args.window, until)
            last = k == n_windows - 1
            rss: dict[str, float] = {}
            while True:
                now = time.time()
                if reporter is None and now >= t0 + duration / 2:
                    reporter = threading.Thread(
                        target=report_follow,
                        daemon=True,
                        args=("report", day_id, closer, state, t0, until + args.report_grace),
                    )
                    reporter.start()
                if now >= w_end:
                    break
                for label, pid in processes(server.pid, worker.pid).items():
                    value = rss_mb(pid)
                    if value is not None:
                        rss[label] = value  # the last sample of the window is its figure
                time.sleep(min(1.0, max(w_end - now, 0.01)))
            alive = sum(t.is_alive() for t in tablets)
            if last:
                for tablet in tablets:  # each ends after the request in flight at `until`
                    tablet.join(timeout=60)
                # Ended at `until`, not by an exception (Tablet.run counts it as "exception:..."), nor hung.
                alive = sum(not t.is_alive() and not any(str(c).startswith("exception:") for c in dict(t.errors))
                            for t in tablets)  # fmt: skip
            cut = None if last else w_end
            lat = [x for c in lat_cursors for x in c.take(cut)]
            ok = sum(len(c.take(cut)) for c in coup_cursors)
            errors_now = sum(sum(dict(t.errors).values()) for t in tablets)
            seconds = (max(time.time(), until) if last else w_end) - w_start
            q = quantiles(lat)
            window = {"k": k + 1, "start": w_start - t0, "seconds": seconds, "ok": ok, "requests": len(lat),
                      "p50": q[49], "p95": q[94], "p99": q[98], "errors": errors_now - errors_before,
                      "alive": alive, "rss": rss}  # fmt: skip
            errors_before = errors_now
            windows.append(window)
            web = " ".join(f"{v:.1f}" for label, v in sorted(rss.items()) if label.startswith("web"))
            cel = " ".join(f"{label.split()[0]} {v:.1f}" for label, v in sorted(rss.items())
                           if label.startswith("celery"))  # fmt: skip
            say(f"window {k + 1:>2} +{w_start - t0:4.0f}s {ok:>6} coups {ok / seconds:6.1f}/s  "
                f"p50 {q[49] * 1000:6.1f}  p95 {q[94] * 1000:6.1f}  p99 {q[98] * 1000:6.1f} ms  "
                f"errors {window['errors']}  tablets {alive}/{len(tablets)}"
                f"  RSS MB web {web} | {cel}")  # fmt: skip
        if reporter is not None:
            if state.finished is None:
                say(f"  (waiting up to {args.report_grace:.0f}s for the report after the load)")
            reporter.join(timeout=max(until + args.report_grace - time.time(), 0) + 5)
    finally:
        state.abandon = True
        if reporter is not None:
            reporter.join(timeout=10)
        if server is not None:
            stop_server(server)
        if worker is not None:
            stop_worker(worker)
        shutil.rmtree(media, ignore_errors=True)

    # ------------------------------------------------------------------ the verdict
    say()
    total_ok = sum(w["ok"] for w in windows)
    errors = sum((Counter(dict(t.errors)) for t in tablets), Counter())
    others = sum(t.other_requests for t in tablets)
    say(f"total: {total_ok} coups in {duration:.0f}s = {total_ok / duration:.1f}/s over {len(tablets)} tablets "
        f"(and {others} bank / shoe requests); errors {sum(errors.values())}")  # fmt: skip
    for code, n in errors.most_common(8):
        say(f"  error {code}: {n}")

    once_ok, once_text = exactly_once(tables, tablets)
    say(f"check: {once_text}")

    report_ok, report_text = report_check(day_id)
    during = state.finished is not None and state.finished <= until
    if state.closed and state.finished:
        say(
            f"report: closed at +{state.closed - t0:.1f}s, {state.status} {state.finished - state.closed:.1f}s "
            f"later (the worker started it {(state.started or state.finished) - state.closed:.1f}s after the "
            f"close, build {state.seconds or 0:.1f}s), {'during' if during else 'AFTER'} the load; {report_text}"
        )
    else:
        say(f"report: {state.status} {state.error}; {report_text}")
    if not report_ok or state.status != "done":
        say(f"  the worker's log ({worker_log}):\n{tail(worker_log)}")

    first, final = windows[0], windows[-1]
    if final["seconds"] < args.window / 2 and len(windows) > 2:  # a short tail is no fair last window
        final = windows[-2]
    p95_change = (final["p95"] / first["p95"] - 1) * 100 if first["p95"] else float("inf")
    say(f"p95: window {first['k']} {first['p95'] * 1000:.1f} ms, window {final['k']} {final['p95'] * 1000:.1f} ms: "
        f"{p95_change:+.1f}%")  # fmt: skip

    say(f"RSS, end of window {first['k']} -> end of window {final['k']}:")
    growths = []
    for label in sorted(set(first["rss"]) | set(final["rss"])):
        a, b = first["rss"].get(label), final["rss"].get(label)
        if a is None or b is None:
            say(f"  {label:<18} {'-' if a is None else f'{a:.1f}'} -> {'-' if b is None else f'{b:.1f}'} MB  "
                "(process not there in both windows: replaced or started late)")  # fmt: skip
            growths.append((label, None))
            continue
        pct = (b / a - 1) * 100
        growths.append((label, pct))
        say(f"  {label:<18} {a:7.1f} -> {b:7.1f} MB  {b - a:+6.1f} MB ({pct:+.1f}%)")

    results = [
        (sum(errors.values()) == 0 and all(w["alive"] == len(tablets) for w in windows),
         f"no error: {sum(errors.values())} errors; "
         f"{min(w['alive'] for w in windows)}/{len(tablets)} tablets ran to the end"),
        (once_ok, "no lost coup: every coup answered 201 is in the database exactly once"),
        (report_ok and during, "the report was built once, by the worker, during the load"
         + ("" if during else " (it was NOT finished when the load ended)")),
        (p95_change <= args.p95_tolerance,
         f"latency stable: p95 last {final['p95'] * 1000:.1f} ms vs first {first['p95'] * 1000:.1f} ms "
         f"({p95_change:+.1f}%, at most +{args.p95_tolerance:g}%)"),
        (bool(growths) and all(g is not None and g <= args.rss_tolerance for _, g in growths),
         f"memory flat: largest growth "
         f"{max((g for _, g in growths if g is not None), default=float('nan')):+.1f}% "
         f"(at most +{args.rss_tolerance:g}% per process, no process replaced)"),
    ]  # fmt: skip
    say("\ntargets:")
    for ok, text in results:
        say(f"  {'PASS' if ok else 'FAIL'}  {text}")
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
