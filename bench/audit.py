"""Benchmark of the audit trail: concurrent appends, then verification (run by hand).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chemin_bench \\
        .venv/bin/python bench/audit.py --events 20000 --streams 8 --workers 8

NOTE: this WRITES to the database named by DATABASE_URL. It creates that database if it
does not exist and migrates it, then appends events to streams named `bench:<run id>:...`
(the trail is append-only, so they stay; point it at a throwaway database, never at one
whose trail matters). Each run uses new stream names and verifies only its own streams.

    # verification only, again, on the streams of an earlier run (nothing appended):
    DATABASE_URL=... .venv/bin/python bench/audit.py --verify-only <run id> --verify-runs 9

What it prints:
1. appends/s: N events on K streams from W threads, each thread with its own connection
   and one transaction per append (as the services do: the change and its event commit
   together), with the latency of one append (median, p95).
2. the same workers on ONE stream: appends to one stream are serialized by its head lock,
   appends to different streams are not, so (1) should be well above (2); and a direct
   check: while one transaction holds stream A's head, appends to the other streams go on.
3. verified events/s: chain_verify over the run's streams (PostgreSQL reads each chunk's
   stored documents, the generated column `doc`, Python hashes them) on --verify-workers
   connections sharing one snapshot, then on one connection; for reference, on one
   connection with the documents built from the columns on each run (the query before the
   `doc` column, same data, runs interleaved) and the event-by-event path (the one SQLite
   uses, and the one that names a break).
4. the same document bytes through a plain hashlib loop, timed right before and after each
   verification run (the faster of the two is that run's reference: the load of a shared
   machine changes from one second to the next), and the ratio of (3) to it, target >= 1/3:
   best of N (best verification / best loop) and the median of the N per-run ratios; and,
   for reference, building the documents + hashlib from values already in memory.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")


def ensure_database(url: str) -> None:
    """CREATE DATABASE if the PostgreSQL database of `url` does not exist yet."""
    import dj_database_url
    import psycopg
    from psycopg import sql

    cfg = dj_database_url.parse(url)
    if "postgresql" not in cfg["ENGINE"]:
        return
    params = {
        "host": cfg.get("HOST") or None,
        "port": cfg.get("PORT") or None,
        "user": cfg.get("USER") or None,
        "password": cfg.get("PASSWORD") or None,
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (cfg["NAME"],)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(cfg["NAME"])))
            print(f"created database {cfg['NAME']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000, help="events appended over K streams (default 20000)")
    parser.add_argument("--streams", type=int, default=8, help="K streams (default 8)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent threads (default 8)")
    parser.add_argument(
        "--verify-workers",
        type=int,
        default=2,
        help="connections of the parallel verification (default 2; chain_verify's own default "
        "is the cores but one, at most 4)",
    )
    parser.add_argument("--verify-runs", type=int, default=5, help="verification runs per variant, best and median reported (default 5)")
    parser.add_argument(
        "--verify-only",
        metavar="RUN",
        default=None,
        help="append nothing: verify again the streams of the earlier run RUN (its 8-hex id)",
    )
    parser.add_argument(
        "--hold-ms",
        type=float,
        default=0.0,
        help="work done in each append's transaction after the append, holding the head "
        "(a service's transaction outlives its audit event; default 0)",
    )
    parser.add_argument(
        "--one-stream-events",
        type=int,
        default=None,
        help="events for the one-stream comparison (default: events/4, it is the slow case)",
    )
    args = parser.parse_args()
    if min(args.events, args.streams, args.workers) < 1:
        parser.error("--events, --streams and --workers must be at least 1")

    url = os.environ.get("DATABASE_URL")
    if not url:
        parser.error("set DATABASE_URL (PostgreSQL): the benchmark writes to that database")
    ensure_database(url)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, connections, transaction

    from audit import selectors
    from audit.hashing import canonical_time, document_bytes, document_sql
    from audit.selectors import _CanonicalTime, chain_verify
    from audit.services import record

    call_command("migrate", verbosity=0)
    if connection.vendor != "postgresql":
        print("warning: not PostgreSQL; the figures mean little (no row locks, no server-side cursors)")

    run = uuid.uuid4().hex[:8]
    hold_seconds = args.hold_ms / 1000
    payload = {"pot": 123400, "levy": 6170, "cards": ["AS", "KD", "9H", "5C"], "banker": "seat:3"}

    def append(stream: str, i: int) -> float:
        started = time.perf_counter()
        with transaction.atomic():
            record(stream=stream, actor=None, action="coup.recorded", data={**payload, "i": i})
            if hold_seconds:
                time.sleep(hold_seconds)  # the rest of the use case, with the head still locked
        return time.perf_counter() - started

    def run_appends(names: list[str], n: int) -> tuple[float, list[float]]:
        # Worker w appends events w, w+W, w+2W...; event i goes to stream i % K, so every
        # stream is written by several workers at once (the contended case per stream).
        def worker(w: int) -> list[float]:
            try:
                return [append(names[i % len(names)], i) for i in range(w, n, args.workers)]
            finally:
                connections.close_all()

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            latencies = [t for chunk in pool.map(worker, range(args.workers)) for t in chunk]
        return time.perf_counter() - started, latencies

    def show(label: str, n: int, seconds: float, latencies: list[float]) -> float:
        rate = n / seconds
        p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) >= 20 else max(latencies)
        print(
            f"{label:<34} {n:>7} events in {seconds:6.2f}s  {rate:9,.0f} appends/s  "
            f"(one append: median {statistics.median(latencies) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms)"
        )
        return rate

    if args.verify_only is not None:
        run = args.verify_only
        from audit.models import AuditStream

        names = list(
            AuditStream.objects.filter(name__startswith=f"bench:{run}:table:").order_by("id").values_list("name", flat=True)
        )
        one = list(AuditStream.objects.filter(name=f"bench:{run}:one").values_list("name", flat=True))
        if not names:
            parser.error(f"no stream of run {run} in this database")
        print(f"run {run} again (nothing appended): {len(names) + len(one)} streams, db {connection.vendor}")
    else:
        print(
            f"run {run}: {args.events} events, {args.streams} streams, {args.workers} workers, "
            f"hold {args.hold_ms:g} ms, db {connection.vendor}"
        )

        # 1. K streams.
        names = [f"bench:{run}:table:{k}" for k in range(args.streams)]
        seconds, latencies = run_appends(names, args.events)
        rate_k = show(f"appends, {args.streams} streams", args.events, seconds, latencies)

        # 2. One stream, same workers.
        one = [f"bench:{run}:one"]
        n_one = args.one_stream_events or max(args.workers, args.events // 4)
        seconds, latencies = run_appends(one, n_one)
        rate_1 = show("appends, 1 stream (same workers)", n_one, seconds, latencies)
        print(f"{'':<34} {args.streams} streams / 1 stream = {rate_k / rate_1:.2f}x throughput")

        # 2b. Held head: one transaction holds stream A's lock; the other streams keep going.
        if len(names) >= 2:
            holding, release = threading.Event(), threading.Event()
            hold_for = 1.0

            def hold() -> None:
                try:
                    with transaction.atomic():
                        record(stream=names[0], actor=None, action="bench.hold")
                        holding.set()
                        release.wait(30)
                finally:
                    connections.close_all()

            def other_streams(stop: threading.Event) -> int:
                count = 0
                try:
                    while not stop.is_set():
                        append(names[1 + count % (len(names) - 1)], count)
                        count += 1
                finally:
                    connections.close_all()
                return count

            def blocked_append() -> float:
                try:
                    return append(names[0], -1)
                finally:
                    connections.close_all()

            with ThreadPoolExecutor(max_workers=3) as pool:
                holder = pool.submit(hold)
                holding.wait(30)
                stop = threading.Event()
                others = pool.submit(other_streams, stop)
                waiter = pool.submit(blocked_append)
                time.sleep(hold_for)
                stop.set()
                done_meanwhile = others.result()
                release.set()
                holder.result()
                waited = waiter.result()
            print(
                f"{'held head':<34} while stream A was held {hold_for:.1f}s, {done_meanwhile} appends to "
                f"the other streams completed; the append to A waited {waited:.2f}s"
            )

    # 3. The same events' document bytes, loaded outside any timing, for the plain hashlib
    # loop that frames each verification run (4).
    from audit.models import AuditEvent

    streams = [*names, *one]
    fields = ["stream__name", "seq", "at_text", "actor_id", "actor_name", "action", "subject_type",
              "subject_id", "payload_json", "prev_hash"]  # fmt: skip
    events = AuditEvent.objects.filter(stream__name__in=streams).order_by("stream_id", "seq")
    if connection.vendor == "postgresql":
        from django.db.models import F

        events = events.annotate(at_text=_CanonicalTime(F("at")))
        values = list(events.values_list(*fields))
    else:
        fields[2] = "at"
        values = [(n, s, canonical_time(at), *rest) for n, s, at, *rest in events.values_list(*fields)]
    blobs = [document_bytes(*row) for row in values]
    sha256 = hashlib.sha256

    def plain_loop() -> float:
        started = time.perf_counter()
        for blob in blobs:
            sha256(blob).hexdigest()
        return time.perf_counter() - started

    # Verify the run's streams N times, the variants alternated (the load of the machine
    # changes over a run; a first untimed run warms the caches), each run framed by two plain
    # loops: the faster is that run's reference, so each run gives its own ratio.
    stored_sql = selectors._FAST_SQL
    built_sql = selectors._fast_sql(document_sql(None, "e")) if connection.vendor == "postgresql" else None
    default = selectors.DEFAULT_VERIFY_WORKERS
    variants = {  # label: (workers, chunk query)
        f"verify, {args.verify_workers} connection{'s' if args.verify_workers > 1 else ''}": (
            args.verify_workers, stored_sql,
        ),
        "verify, 1 connection": (1, stored_sql),
    }  # fmt: skip
    if built_sql is not None:
        variants["verify, 1 conn., docs built per run"] = (1, built_sql)

    def verify(workers: int, sql: str):
        selectors._FAST_SQL = sql
        try:
            return chain_verify(streams=streams, workers=workers)
        finally:
            selectors._FAST_SQL = stored_sql

    for workers, sql in variants.values():
        verify(workers, sql)
    by_variant: dict[str, list] = {label: [] for label in variants}  # (result, plain loop seconds)
    for _ in range(max(1, args.verify_runs)):
        for label, (workers, sql) in variants.items():
            before = plain_loop()
            result = verify(workers, sql)
            by_variant[label].append((result, min(before, plain_loop())))
    plain_best = min(seconds for runs in by_variant.values() for _, seconds in runs)
    ratios = {}
    for label, runs in by_variant.items():
        results = [result for result, _ in runs]
        best = min(results, key=lambda result: result.seconds)
        if not all(result.ok for result in results) or best.events_checked != len(blobs):
            print(f"VERIFY FAILED: {best.first_broken} ({best.events_checked} of {len(blobs)} events)")
            return 1
        rate = best.events_checked / best.seconds
        median = statistics.median(result.seconds for result in results)
        ratios[label] = (plain_best / best.seconds, statistics.median(plain / r.seconds for r, plain in runs))
        print(
            f"{label:<34} {best.events_checked:>7} events in {best.seconds:6.3f}s  {rate:9,.0f} events/s  "
            f"(median {median:.3f}s; runs: {', '.join(f'{r.seconds:.3f}' for r in results)})"
        )
    slow = chain_verify(streams=streams, fast=False)
    print(
        f"{'verify, event by event (fast=False)':<34} {slow.events_checked:>7} events in {slow.seconds:6.2f}s  "
        f"{slow.events_checked / slow.seconds:9,.0f} events/s"
    )

    # 4. The baselines: the plain loop (best of all the framing loops) and, for reference,
    # building the documents + hashlib from values already in memory.
    started = time.perf_counter()
    for row in values:
        sha256(document_bytes(*row)).hexdigest()
    encode_seconds = time.perf_counter() - started

    mean_size = sum(map(len, blobs)) / len(blobs)
    print(f"{'plain hashlib loop (same bytes)':<34} {len(blobs):>7} events  {len(blobs) / plain_best:9,.0f} events/s  "
          f"(best of {2 * len(variants) * max(1, args.verify_runs)}; mean {mean_size:.0f} bytes)")  # fmt: skip
    print(f"{'encode + hashlib, in memory':<34} {len(values):>7} events  {len(values) / encode_seconds:9,.0f} events/s")
    print(f"load average (1 min) now: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for label, (best_ratio, median_ratio) in ratios.items():
        workers = variants[label][0]
        mark = " [chain_verify's default here]" if workers == default and variants[label][1] is stored_sql else ""
        print(
            f"ratio {label} / plain hashlib = {best_ratio:.3f} best of {max(1, args.verify_runs)}, "
            f"{median_ratio:.3f} median of the per-run ratios (target >= 0.333){mark}; "
            f"verify / (encode + hashlib in memory) = {encode_seconds / min(r.seconds for r, _ in by_variant[label]):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
