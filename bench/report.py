"""Benchmark of the end-of-day report (run by hand; prints its figures).

    .venv/bin/python bench/report.py --coups 10000 100000 1000000 [--json results.json]

It WRITES to its own database (--database-url, default
postgres://postgres@127.0.0.1:5432/chemin_bench_report), which it creates and migrates.
For each N it synthesizes one closed gaming day of N coups on --tables tables with set-based
bulk inserts (INSERT ... SELECT over generate_series: banks every 8 coups, postings per
coup that sum to zero, a non-conforming coup in 97, a voided card in 1000), then measures,
each phase in a FRESH process so that its peak RSS (ru_maxrss) is its own:

  baseline   Django set up and connected, nothing else: the RSS every phase starts from
  aggregate  the plain SQL aggregate of the report's figures (per table, per session, per
             bank: coups, wins, ties, covered, levies, house postings), one GROUP BY each
  figures    the report's own figures + document (build_document: the same aggregates
             through the ORM, the exact odds, the facts) without writing any file
  rows       figures + every section's rows pulled through the streaming iterators
  csv / xlsx / pdf   figures + one writer (audit.exports) to /dev/null-like temp file
  report     the whole report_build service: one snapshot, seal, the three files, SHA-256

At the end a table per N: the time of the report (figures, and the whole build with its three
files) against the plain aggregate, and each phase's peak RSS, so "flat" reads down a column.

Targets: figures within 3x the plain aggregate; peak memory flat as N grows."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/chemin_bench_report"
SERIAL = ("baseline", "aggregate", "figures")  # the timed comparison: never beside another phase


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.pop("REDIS_URL", None)  # eager, in-process
    import django

    django.setup()


def ensure_database(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def synthesize(n: int, tables: int) -> int:
    """One closed gaming day with n coups; returns its id."""
    import datetime as dt

    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from floor.models import Casino, GamingDay, Patron, Seat, Site, Table, TableSession

    User = get_user_model()
    started = time.perf_counter()
    with transaction.atomic():
        tag = f"bench{n}-{int(time.time())}"
        user = User.objects.create(username=tag)
        casino = Casino.objects.create(name=tag, code=tag)
        site = Site.objects.create(casino=casino, name="Sala")
        day = GamingDay.objects.create(casino=casino, date=dt.date(2000, 1, 1) + dt.timedelta(days=n % 9000),
                                       opened_at=timezone.now(), opened_by=user)  # fmt: skip
        now = timezone.now()
        sessions = []
        for t in range(1, tables + 1):
            table = Table.objects.create(casino=casino, site=site, number=t)
            sessions.append(TableSession.objects.create(
                table=table, gaming_day=day, number=1, capo_partita=user, changeur=user, shoe_number=f"S{t}",
                minimum=100_00, status="closed", opened_at=now, opened_by=user, closed_at=now, closed_by=user))  # fmt: skip
        patrons = Patron.objects.bulk_create([
            Patron(first_name=f"P{i}", last_name=tag, document_type="id_card", document_number=f"{tag}-{i}",
                   nationality="IT", created_at=now, created_by=user) for i in range(tables * 8)])  # fmt: skip
        seats = Seat.objects.bulk_create([
            Seat(session=s, patron=patrons[i * 8 + k], seat_number=k + 1, taken_at=now, taken_by=user, left_at=now)
            for i, s in enumerate(sessions) for k in range(8)])  # fmt: skip
        sids = [s.pk for s in sessions]
        first_seat = {s.pk: seats[i * 8] for i, s in enumerate(sessions)}
        with connection.cursor() as c:
            c.execute("CREATE TEMP TABLE bench_session (idx int, session_id bigint, seat_id bigint, banker_id bigint,"
                      " punta_id bigint) ON COMMIT DROP")  # fmt: skip
            for i, sid in enumerate(sids):
                c.execute("INSERT INTO bench_session VALUES (%s,%s,%s,%s,%s)",
                          [i, sid, first_seat[sid].pk, first_seat[sid].patron_id, seats[i * 8 + 1].patron_id])
            per = -(-n // tables)
            c.execute("""INSERT INTO tables_shoe (session_id, seq, number, decks, burn_cards, stop_card_from_end,
                         state, loaded_at, loaded_by_id, finished_at, finished_by_id)
                         SELECT session_id, 1, 'S', 6, 0, 7, '{}'::jsonb, now(), %s, now(), %s FROM bench_session""",
                      [user.pk, user.pk])  # fmt: skip
            c.execute("""INSERT INTO tables_bank (session_id, number, banker_id, seat_id, amount, initial_amount,
                         reserve_returned, raised, status, end_reason, origin, coups_completed, opened_at,
                         opened_by_id, ended_at, ended_by_id)
                         SELECT b.session_id, g, b.banker_id, b.seat_id, 1000000, 1000000, 0, 0, 'ended', 'lost',
                                CASE WHEN g = 1 THEN 'first' ELSE 'succession' END, 8, now(), %s, now(), %s
                         FROM bench_session b, generate_series(1, %s) g""", [user.pk, user.pk, -(-per // 8)])  # fmt: skip
            # Coup g of the day goes to session g % tables, as its coup number (g / tables) + 1.
            c.execute("""
                INSERT INTO tables_coup (session_id, bank_id, shoe_id, number, state, bank_amount, covered,
                    banco_solo, punta_id, regola_punta, regola_banker, cards, punta_draws, banker_draws, next_cards,
                    reconstruction, needs, as_played, conforming, violations, settled, settlement, winner, cagnotte,
                    banker_net, opened_at, opened_by_id, closed_at, settled_at, settled_by_id, annul_reason)
                SELECT b.session_id, bank.id, shoe.id, x.num, 'settled', 1000000, x.cov, false, b.punta_id, false,
                    x.g %% 3 = 0, '["KH","5S","3C","2D","2S"]'::jsonb, true, false, '[]'::jsonb, '{}'::jsonb, NULL,
                    '{"winner":"x"}'::jsonb, x.g %% 97 <> 0,
                    CASE WHEN x.g %% 97 = 0 THEN '[{"side":"banker","required":"draw","done":"stand"}]'::jsonb
                         ELSE '[]'::jsonb END,
                    '{"winner":"x"}'::jsonb, '{}'::jsonb, x.win,
                    CASE WHEN x.win = 'banker' THEN x.levy ELSE 0 END,
                    CASE WHEN x.win = 'banker' THEN x.cov - x.levy WHEN x.win = 'punta' THEN -x.cov ELSE 0 END,
                    now(), %s, now(), now() + x.num * interval '1 second', %s, ''
                FROM (SELECT g, g %% %s AS idx, g / %s + 1 AS num, 10000 + (g * 104729 %% 500) * 100 AS cov,
                             ((10000 + (g * 104729 %% 500) * 100) * 5 / 100 + 5) / 10 * 10 AS levy,
                             CASE WHEN g * 7919 %% 100 < 46 THEN 'banker' WHEN g * 7919 %% 100 < 91 THEN 'punta'
                                  ELSE 'tie' END AS win
                      FROM generate_series(0::bigint, %s - 1) g) x
                JOIN bench_session b ON b.idx = x.idx
                JOIN tables_shoe shoe ON shoe.session_id = b.session_id
                JOIN tables_bank bank ON bank.session_id = b.session_id AND bank.number = (x.num - 1) / 8 + 1
            """, [user.pk, user.pk, tables, tables, n])  # fmt: skip
            c.execute("""
                INSERT INTO tables_posting (coup_id, session_id, patron_id, bet_id, role, amount, at)
                SELECT id, session_id, NULL::bigint, NULL::bigint, 'house', cagnotte, settled_at FROM tables_coup
                 WHERE session_id = ANY(%s) AND winner = 'banker'
                UNION ALL
                SELECT c.id, c.session_id, bank.banker_id, NULL::bigint, 'banker', c.banker_net, c.settled_at
                  FROM tables_coup c JOIN tables_bank bank ON bank.id = c.bank_id
                 WHERE c.session_id = ANY(%s) AND c.winner <> 'tie'
                UNION ALL
                SELECT id, session_id, punta_id, NULL::bigint, 'bettor',
                       CASE WHEN winner = 'banker' THEN -covered ELSE covered END, settled_at
                  FROM tables_coup WHERE session_id = ANY(%s) AND winner <> 'tie'
            """, [sids, sids, sids])  # fmt: skip
            c.execute("""INSERT INTO tables_shoecard (shoe_id, position, code, use, coup_id, side, voided,
                         void_reason, at, by_id)
                         SELECT shoe.id, g, 'QS', 'void', NULL, '', true, 'seen face up', now(), %s
                         FROM tables_shoe shoe, generate_series(1, greatest(1, %s / 1000 / %s)) g
                         WHERE shoe.session_id = ANY(%s)""", [user.pk, n, tables, sids])  # fmt: skip
        day.closed_at, day.closed_by = timezone.now(), user
        day.save()
    with connection.cursor() as c:
        c.execute("ANALYZE")
    print(f"  synthesized N={n:,} coups on {tables} tables in {time.perf_counter() - started:.1f} s (day {day.pk})")
    return day.pk


AGGREGATE_SQL = [
    # per table: coups, wins, ties, non-conforming, covered, levies recorded
    """SELECT s.table_id, count(*), count(*) FILTER (WHERE winner = 'banker'), count(*) FILTER (WHERE winner='punta'),
              count(*) FILTER (WHERE winner = 'tie'), count(*) FILTER (WHERE NOT conforming),
              sum(covered), sum(cagnotte)
         FROM tables_coup c JOIN floor_tablesession s ON s.id = c.session_id
        WHERE s.gaming_day_id = %(day)s GROUP BY s.table_id""",
    # per session: the same
    """SELECT c.session_id, count(*), count(*) FILTER (WHERE winner = 'banker'), sum(covered), sum(cagnotte)
         FROM tables_coup c JOIN floor_tablesession s ON s.id = c.session_id
        WHERE s.gaming_day_id = %(day)s GROUP BY c.session_id""",
    # the expected cagnotte: house postings per table and per session
    """SELECT s.table_id, p.session_id, sum(amount) FROM tables_posting p JOIN floor_tablesession s
           ON s.id = p.session_id WHERE s.gaming_day_id = %(day)s AND role = 'house'
        GROUP BY GROUPING SETS ((s.table_id), (p.session_id))""",
    # per bank
    """SELECT b.id, count(c.id), count(c.id) FILTER (WHERE c.winner = 'banker'), sum(c.covered), sum(c.cagnotte),
              sum(c.banker_net)
         FROM tables_bank b JOIN floor_tablesession s ON s.id = b.session_id LEFT JOIN tables_coup c
           ON c.bank_id = b.id WHERE s.gaming_day_id = %(day)s GROUP BY b.id""",
    # the rules used
    """SELECT s.table_id, regola_punta, regola_banker, banco_solo, count(*) FROM tables_coup c
         JOIN floor_tablesession s ON s.id = c.session_id WHERE s.gaming_day_id = %(day)s
          AND winner IN ('banker', 'punta') GROUP BY 1, 2, 3, 4""",
]


def phase(name: str, day_id: int) -> dict:
    """Run one phase in this process; return seconds and peak RSS."""
    from django.db import connection, transaction

    from audit.models import DayReport, ReportFile
    from audit.reports.builder import build_document
    from audit.reports.services import report_build, writers
    from floor.models import GamingDay

    with connection.cursor() as c:  # connect before the clock starts, in every phase
        c.execute("SELECT 1")
    t0 = time.perf_counter()
    if name == "baseline":
        pass
    elif name == "aggregate":
        with connection.cursor() as c:
            for sql in AGGREGATE_SQL:
                c.execute(sql, {"day": day_id})
                c.fetchall()
    elif name in ("figures", "rows", "csv", "xlsx", "pdf"):
        day = GamingDay.objects.select_related("casino").get(pk=day_id)
        with transaction.atomic():
            built = build_document(day=day, version=1, seal="0" * 64, streams=[])
            if name == "rows":
                for section in built.document.sections:
                    for _ in section.rows():
                        pass
            elif name != "figures":
                with tempfile.TemporaryFile() as fp:
                    writers()[name](built.document, fp)
                    size = fp.tell()
                return {"seconds": time.perf_counter() - t0, "maxrss_mb": _rss(), "bytes": size}
    elif name == "report":
        from django.conf import settings

        ReportFile.objects.filter(report__gaming_day_id=day_id).delete()
        DayReport.objects.filter(gaming_day_id=day_id).delete()
        settings.MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="chemin-bench-"))
        t0 = time.perf_counter()
        report = report_build(gaming_day_id=day_id)
        assert report.status == "done", report.error
        sizes = {f.format: f.size for f in report.files.all()}
        return {"seconds": time.perf_counter() - t0, "maxrss_mb": _rss(), "bytes": sum(sizes.values())}
    return {"seconds": time.perf_counter() - t0, "maxrss_mb": _rss()}


def _rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coups", "--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--phases", nargs="+",
                        default=["baseline", "aggregate", "figures", "rows", "csv", "xlsx", "pdf", "report"])
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--jobs", type=int, default=1,
                        help="run the export phases (not baseline/aggregate/figures) this many at a time")
    parser.add_argument("--_phase", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._phase:  # a child: one phase, JSON on stdout
        setup_django(args.database_url)
        print(json.dumps(phase(args._phase[0], int(args._phase[1]))))
        return
    ensure_database(args.database_url)
    setup_django(args.database_url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(f"database {args.database_url.rsplit('/', 1)[1]}, {args.tables} tables", flush=True)
    table: dict[int, dict] = {}
    for n in args.coups:
        day_id = synthesize(n, args.tables)
        results: dict[str, dict] = {}

        def run(name: str, n=n, day_id=day_id, results=results) -> None:
            out = subprocess.run(
                [sys.executable, __file__, "--database-url", args.database_url, "--_phase", name, str(day_id)],
                capture_output=True, text=True, check=False, cwd=ROOT,
            )  # fmt: skip
            if out.returncode:
                print(f"  {name}: FAILED\n{out.stderr[-2000:]}", flush=True)
                return
            results[name] = r = json.loads(out.stdout.strip().splitlines()[-1])
            extra = f", {r['bytes'] / 1e6:.1f} MB written" if "bytes" in r else ""
            print(f"  N={n:>9,} {name:>9}: {r['seconds']:8.2f} s, peak RSS {r['maxrss_mb']:7.1f} MB{extra}",
                  flush=True)  # fmt: skip

        # The timed comparison runs alone; the exports may then run side by side (--jobs):
        # their peak RSS is per process either way, their seconds are then shared-CPU seconds.
        alone = [p for p in args.phases if p in SERIAL or args.jobs == 1]
        for name in alone:
            run(name)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(run, [p for p in args.phases if p not in alone]))
        results = {p: results[p] for p in args.phases if p in results}
        if "aggregate" in results and "figures" in results:
            print(f"  N={n:>9,} figures / plain aggregate = "
                  f"{results['figures']['seconds'] / results['aggregate']['seconds']:.2f}x (target <= 3x)")  # fmt: skip
        table[n] = results
        if args.json:
            Path(args.json).write_text(json.dumps(table, indent=1))
    summary(table, args.phases)


def summary(table: dict[int, dict], phases: list[str]) -> None:
    """One line per N: times against the plain aggregate, then every phase's peak RSS."""
    if not table:
        return
    print("\nseconds (x = over the plain aggregate)")
    print(f"{'N':>10} {'aggregate':>10} {'figures':>16} {'report (3 files)':>22}")
    for n, r in table.items():
        agg = r.get("aggregate", {}).get("seconds")

        def timed(name: str, r=r, agg=agg) -> str:
            if name not in r:
                return "-"
            ratio = f" ({r[name]['seconds'] / agg:.1f}x)" if agg else ""
            return f"{r[name]['seconds']:.2f}{ratio}"

        print(f"{n:>10,} {agg if agg is None else round(agg, 3):>10} {timed('figures'):>16} {timed('report'):>22}")
    print("\npeak RSS, MB (flat as N grows: read down a column)")
    print(f"{'N':>10} " + " ".join(f"{p:>9}" for p in phases))
    for n, r in table.items():
        print(f"{n:>10,} " + " ".join(f"{r[p]['maxrss_mb']:>9.1f}" if p in r else f"{'-':>9}" for p in phases))


if __name__ == "__main__":
    main()
