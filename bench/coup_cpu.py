"""The app server's CPU per one-shot coup, in process (run by hand): far less noisy than the
HTTP benchmark (bench/coups.py), to compare two commits on one machine.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chemin_bench_coups \\
        .venv/bin/python bench/coup_cpu.py --coups 300 [--profile]

NOTE: this WRITES to the database named by DATABASE_URL (PostgreSQL; created and migrated if
needed), seeding a new casino each run as bench/coups.py does.

It seeds --tables tables as bench/coups.py does, then plays whole coups round robin at them
through the real WSGI handler (config.wsgi: every middleware, DRF, token authentication),
one request at a time in this process, with bench/coups.py's tablet (its shoe, bettors,
bank passing and new shoes), the settings of its gunicorn (base, DEBUG off, persistent
connection, LOG_LEVEL WARNING, no Redis). The first --warmup coups are not measured.
Prints, for the measured coups: the CPU (time.process_time) per coup request, per coup with
its share of bank and shoe requests, the CPU PostgreSQL's backend of this connection spent
per coup (from /proc), and the queries of one coup request (CaptureQueriesContext).
--profile: cProfile over the measured requests, the top functions by tottime and cumtime.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.base"
os.environ["DJANGO_DEBUG"] = "0"
os.environ["DATABASE_CONN_MAX_AGE"] = "600"
os.environ["LOG_LEVEL"] = "WARNING"
os.environ.pop("REDIS_URL", None)

from bench.coups import DEFAULT_URL, Tablet, ensure_database, seed  # noqa: E402


def backend_cpu(pid: int) -> float:
    """User + system CPU seconds of one PostgreSQL backend (Linux; 0 elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class InProcessTablet(Tablet):
    """bench/coups.py's tablet, its requests sent to the WSGI handler in this process."""

    def __init__(self, table: dict, run: str, bettors: int, app):
        super().__init__(table, 0, run, 0, bettors, False)
        self.app = app
        self.cpu: dict[str, float] = defaultdict(float)
        self.count: Counter = Counter()
        self.each: dict[str, list[float]] = defaultdict(list)
        self.measure = False
        self.capture: dict[str, list] | None = None  # kind: the queries of its next request, once

    def request(self, method: str, path: str, body=None, key: str | None = None):
        data = b"" if body is None else json.dumps(body).encode()
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SCRIPT_NAME": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8765", "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8765",
            "HTTP_AUTHORIZATION": self.headers["Authorization"], "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(data)), "wsgi.input": io.BytesIO(data), "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http", "wsgi.version": (1, 0), "wsgi.multithread": True,
            "wsgi.multiprocess": True, "wsgi.run_once": False,
        }  # fmt: skip
        if key:
            environ["HTTP_IDEMPOTENCY_KEY"] = key
        kind = "record" if path.endswith("/record/") else "bank" if "/banks/" in path else "shoe"
        status = []
        capture = self.capture is not None and kind in self.capture and not self.capture[kind]
        if capture:
            from django.db import connection
            from django.test.utils import CaptureQueriesContext

            context = CaptureQueriesContext(connection)
            context.__enter__()
        started = time.process_time()
        chunks = self.app(environ, lambda s, h, exc_info=None: status.append(s))
        raw = b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        spent = time.process_time() - started
        if capture:
            context.__exit__(None, None, None)
            self.capture[kind].extend(context.captured_queries)
        if self.measure:
            self.cpu[kind] += spent
            self.count[kind] += 1
            self.each[kind].append(spent)
        return int(status[0].split()[0]), (json.loads(raw) if raw else {}), spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coups", type=int, default=300, help="measured coups (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="coups played first, not measured (30)")
    parser.add_argument("--tables", type=int, default=2)
    parser.add_argument("--bettors", type=int, default=3)
    parser.add_argument(
        "--seed", default="coup_cpu", help="the tablets' random seed: the same coups, bets and banks at every run"
    )
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--queries", action="store_true", help="print the SQL of one coup request")
    parser.add_argument("--profile-out", help="also dump the profile's stats to this file (pstats)")
    args = parser.parse_args()

    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    os.environ["DATABASE_URL"] = url
    ensure_database(url)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from config.wsgi import application

    call_command("migrate", verbosity=0)
    run = uuid.uuid4().hex[:8]
    tablets = [InProcessTablet(t, run, args.bettors, application) for t in seed(args.tables, run)]
    for tablet in tablets:  # the same play at every run (the keys stay the run's own)
        tablet.rng = random.Random(f"{args.seed}:{tablet.t['table']}")
        tablet.shoe = tablet.new_shoe()

    def play(n: int) -> None:
        for i in range(n):
            tablet = tablets[i % len(tablets)]
            tablet.one_coup()
            if tablet.errors:
                raise SystemExit(f"error: {dict(tablet.errors)}")

    play(args.warmup)
    captured: dict[str, list] = {"record": [], "bank": []}
    tablets[0].capture = captured
    for _ in range(20):
        play(len(tablets))
        if captured["bank"]:
            break
    tablets[0].capture = None
    record = captured["record"]
    backend = connection.cursor().connection.info.backend_pid
    for tablet in tablets:
        tablet.measure = True
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)  # CPU, not the waits on PostgreSQL
        profiler.enable()
    pg_before = backend_cpu(backend)
    play(args.coups)
    pg_after = backend_cpu(backend)
    if profiler is not None:
        profiler.disable()

    cpu, count = defaultdict(float), Counter()
    for tablet in tablets:
        for kind, spent in tablet.cpu.items():
            cpu[kind] += spent
        count.update(tablet.count)
    coups = count["record"]
    print(f"run {run}: {coups} coups measured at {len(tablets)} tables (after {args.warmup} unmeasured); "
          f"also {count['bank']} bank and {count['shoe']} shoe requests")  # fmt: skip
    each = defaultdict(list)
    for tablet in tablets:
        for kind, spent in tablet.each.items():
            each[kind] += spent
    print(f"app CPU per coup request:           {cpu['record'] / coups * 1000:6.2f} ms "
          f"(median {statistics.median(each['record']) * 1000:.2f} ms: less moved by other load)")  # fmt: skip
    for kind in ("bank", "shoe"):
        if count[kind]:
            print(f"app CPU per {kind} request:           {cpu[kind] / count[kind] * 1000:6.2f} ms")
    print(f"app CPU per coup, bank/shoe share:  {sum(cpu.values()) / coups * 1000:6.2f} ms")
    print(f"PostgreSQL backend CPU per coup:    {(pg_after - pg_before) / coups * 1000:6.2f} ms "
          "(bank/shoe share included; /proc ticks)")  # fmt: skip
    print(f"queries of one coup request: {len(record)}; of one bank request: {len(captured['bank'])}")
    if args.queries:
        for kind in ("record", "bank"):
            print(f"{kind}:")
            for q in captured[kind]:
                print("   ", q["sql"][:300])
    if profiler is not None:
        import pstats

        if args.profile_out:
            profiler.dump_stats(args.profile_out)
        for order in ("tottime", "cumulative"):
            print(f"\nprofile of the measured requests, by {order}:")
            pstats.Stats(profiler).sort_stats(order).print_stats(35)
    return 0


if __name__ == "__main__":
    sys.exit(main())
