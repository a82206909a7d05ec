"""A season of play, then what every history page and list costs on it (run by hand).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chemin_season \\
        .venv/bin/python bench/season.py seed --days 100 --tables 7
    DATABASE_URL=... .venv/bin/python bench/season.py measure [--json out.json]

NOTE: `seed` WRITES to the database named by DATABASE_URL (PostgreSQL; created and migrated
if needed): one casino ("season") with --tables venezia tables and a pool of --patrons
patrons who come back day after day. Every day goes through the services, as the floor
would: the Commissario opens it and a session per table (8 patrons drawn from the pool,
each table its own Capo Partita and changeur), bench/coups.py's tablet records 40-80 whole
coups at each through the coup API in process (bets, banks passing after a loss, new shoes),
then the sessions and the day close (the report builds in process), the Direzione counts
each table's cagnotte with a witness, prepares the control register and signs it twice
(report version 2). The clock is moved back so that the season ends today: the days have
their own dates, the last one is left open with its tables in play (--open-coups each).

`measure` logs in as each role (the demo's kinds of user) and reads every page and list or
detail endpoint that shows history, with Django's test client: per request the number of
SQL queries (CaptureQueriesContext), the wall time (best of --repeat) and the answer's size.
Run it on a season and on a small database (`seed --days 2 --tables 2 --coups 5
--coups-max 5`), each with --json, and `compare small.json season.json` prints them side by
side (status, queries, best wall time in ms, bytes: small/season)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.base"
os.environ["DJANGO_DEBUG"] = "0"
os.environ["LOG_LEVEL"] = "WARNING"
os.environ.pop("REDIS_URL", None)  # Celery eager: the reports build in process
os.environ.setdefault("MFA_ROLES", "none")

from bench.coup_cpu import InProcessTablet  # noqa: E402
from bench.coups import DEFAULT_URL, ensure_database  # noqa: E402

CASINO = "season"


class Clock:
    """timezone.now() moved back by `offset`: the services date the rows and events by it."""

    def __init__(self):
        from django.utils import timezone

        self.real = timezone.now
        self.offset = dt.timedelta(0)
        timezone.now = lambda: self.real() - self.offset


def users():
    from floor.roles import Role
    from tests.factories import UserFactory

    def make(name, role):
        return UserFactory(username=f"{CASINO}-{name}", roles=[role])

    return {
        "commissario": make("commissario", Role.COMMISSARIO),
        "direzione": make("direzione", Role.DIREZIONE),
        "direzione2": make("direzione2", Role.DIREZIONE),
        "auditor": make("auditor", Role.AUDITOR),
        "capo": [make(f"capo{n}", Role.CAPO_PARTITA) for n in range(1, 21)],
        "changeur": [make(f"changeur{n}", Role.CHANGEUR) for n in range(1, 21)],
    }


def seed(args) -> None:
    from django.core.management import call_command

    from audit.reports import registers
    from floor import services as floor
    from floor.authentication import issue_token
    from floor.models import Casino, GamingDay, Site, Table
    from tables import report_selectors
    from tables import services as tables
    from tests.factories import PatronFactory

    call_command("migrate", verbosity=0)
    clock = Clock()
    clock.offset = dt.timedelta(days=args.days)
    u = users()
    casino, _ = Casino.objects.get_or_create(code=CASINO, defaults={"name": "Casinò della stagione"})
    site, _ = Site.objects.get_or_create(casino=casino, name="Sala Europa")
    by = u["commissario"]
    tabs = []
    for n in range(1, args.tables + 1):
        t = Table.objects.filter(casino=casino, number=n).first()
        tabs.append(t or floor.table_create(casino=casino, site=site, number=n, by=u["direzione"], profile="venezia"))
    pool = [PatronFactory(created_by=by, document_number=f"SEASON{i:05d}") for i in range(args.patrons)]
    rng = random.Random(args.seed)
    started = time.perf_counter()
    run = uuid.uuid4().hex[:8]
    from config.wsgi import application

    coups = 0
    for d in range(args.days + 1):
        last = d == args.days
        clock.offset = dt.timedelta(days=args.days - d)
        day = floor.gaming_day_open(casino=casino, by=by)
        tablets = []
        today = rng.sample(pool, 8 * len(tabs))  # no one sits at two tables (RULES.md §6)
        for i, table in enumerate(tabs):
            capo, changeur = u["capo"][i], u["changeur"][i]
            session = floor.table_session_open(
                table=table, by=by, capo_partita=capo, changeur=changeur,
                shoe_number=f"S{table.number}-{d}", minimum=rng.choice([50_00, 100_00, 200_00]),
            )  # fmt: skip
            patrons = today[8 * i : 8 * i + 8]
            for seat, patron in enumerate(patrons, 1):
                floor.seat_assign(session=session, patron=patron, seat_number=seat, by=by)
            tables.shoe_load(session=session, by=capo)
            tables.bank_open(session=session, by=capo, patron=patrons[0], amount=1000_00)
            token, _ = issue_token(capo)
            t = {"table": table.number, "session": session.pk, "token": token, "patrons": [p.pk for p in patrons]}
            tablet = InProcessTablet(t, f"{run}:{d}", 3, application)
            tablet.rng = random.Random(f"{args.seed}:{d}:{table.number}")
            tablet.shoe = tablet.new_shoe()
            tablets.append((session, tablet, args.open_coups if last else rng.randint(args.coups, args.coups_max)))
        for _session, tablet, n in tablets:
            for _ in range(n):
                tablet.one_coup()
            if tablet.errors:
                raise SystemExit(f"day {d} table {tablet.t['table']}: {dict(tablet.errors)}")
            coups += n
        if last:
            break
        for session, _, _ in tablets:
            floor.table_session_close(session=session, by=by)
        floor.gaming_day_close(gaming_day=day, by=by)
        day = GamingDay.objects.get(pk=day.pk)
        for table in tabs:
            expected = report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk)
            registers.cagnotte_count_record(
                gaming_day=day, table=table, by=u["direzione"], witness=u["auditor"],
                counted=expected + (100 if rng.random() < 0.05 else 0),  # now and then a surplus
            )  # fmt: skip
        register = registers.control_register_prepare(gaming_day=day, by=u["direzione"])
        register = registers.control_register_sign(register=register, by=u["direzione"])
        registers.control_register_sign(register=register, by=u["direzione2"])
        print(f"  day {d + 1}/{args.days} {day.date}: {coups:,} coups so far, "
              f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
    from django.db import connection

    with connection.cursor() as c:
        c.execute("ANALYZE")
    print(f"seeded {args.days} closed days and an open one, {coups:,} coups, in {time.perf_counter() - started:.0f} s")


def targets() -> list[tuple[str, str, str]]:
    """(role, method, path) of every history page and list or detail endpoint, with ids taken
    from the season: its latest closed day, its first, a session and coup of table 1, a
    patron who came back most often, the latest report."""
    from django.db.models import Count

    from audit.models import CagnotteCount, DayReport
    from floor.models import Casino, GamingDay, Patron, Table, TableSession
    from tables.models import Coup

    casino = Casino.objects.get(code=CASINO)
    days = GamingDay.objects.filter(casino=casino).order_by("date")
    first, last_closed = days.first(), days.filter(closed_at__isnull=False).last()
    open_day = days.filter(closed_at__isnull=True).first()
    table1 = Table.objects.get(casino=casino, number=1)
    old = TableSession.objects.get(gaming_day=last_closed, table=table1)
    live = TableSession.objects.get(gaming_day=open_day, table=table1)
    coup = Coup.objects.filter(session=old).order_by("number").last()
    patron = Patron.objects.annotate(n=Count("seats")).order_by("-n").first()
    report = DayReport.objects.filter(gaming_day=last_closed).order_by("-version").first()
    count = CagnotteCount.objects.filter(gaming_day=last_closed).first()
    api = [
        "/api/me/", "/api/casinos/", "/api/tables/", f"/api/tables/{table1.pk}/",
        "/api/gaming-days/", "/api/gaming-days/?page=2", f"/api/gaming-days/?casino={casino.pk}&is_open=false",
        f"/api/gaming-days/?date_from={first.date}", "/api/gaming-days/?page_size=500",
        "/api/sessions/", "/api/sessions/?page=3", f"/api/sessions/?table={table1.pk}",
        f"/api/sessions/?date_from={first.date}&date_to={last_closed.date}", f"/api/sessions/?date={last_closed.date}",
        f"/api/sessions/?gaming_day={last_closed.pk}", "/api/sessions/?status=closed", "/api/sessions/?page_size=500",
        f"/api/sessions/{old.pk}/", f"/api/sessions/{old.pk}/game/", f"/api/sessions/{old.pk}/balances/",
        f"/api/sessions/{old.pk}/coups/", f"/api/sessions/{old.pk}/coups/?page_size=500",
        f"/api/sessions/{old.pk}/banks/", f"/api/sessions/{old.pk}/seats/", f"/api/sessions/{old.pk}/succession/",
        f"/api/sessions/{old.pk}/minimum-changes/", f"/api/sessions/{old.pk}/staff-changes/",
        f"/api/sessions/{live.pk}/game/", f"/api/sessions/{live.pk}/coups/", f"/api/coups/{coup.pk}/",
        "/api/patrons/", "/api/patrons/?page_size=500", f"/api/patrons/?search={patron.last_name[:4]}",
        f"/api/patrons/{patron.pk}/", f"/api/sessions/{old.pk}/seats/?patron={patron.pk}",
        "/api/audit/events/", "/api/audit/events/?page=50", f"/api/audit/events/?stream=table_session:{old.pk}",
        "/api/audit/events/?action=coup.settled", f"/api/audit/events/?subject_type=tables.coup&subject_id={coup.pk}",
        f"/api/audit/events/?actor={old.capo_partita_id}", "/api/audit/events/?action_prefix=cagnotte.",
        "/api/audit/streams/", "/api/audit/streams/?name_prefix=table_session:",
        "/api/reports/", "/api/reports/?page=2", f"/api/reports/{report.pk}/",
        f"/api/gaming-days/{last_closed.pk}/report/", f"/api/reports/{report.pk}/files/csv/",
        f"/api/gaming-days/{last_closed.pk}/cagnotte-counts/", f"/api/gaming-days/{last_closed.pk}/cagnotte-register/",
        f"/api/gaming-days/{last_closed.pk}/control-register/",
    ]
    pages = [
        "/", "/tablet/", f"/tablet/sessions/{live.pk}/", f"/tablet/sessions/{old.pk}/", "/floor/",
        f"/floor/tables/{table1.pk}/live/", "/desk/", "/desk/?page=2", f"/desk/days/{last_closed.pk}/",
        f"/desk/days/{first.pk}/", f"/desk/reports/{report.pk}/", f"/desk/reports/{report.pk}/files/pdf/",
    ]
    posts = [f"/api/reports/{report.pk}/verify/", "/api/audit/verify/"]
    out = []
    for role in ("commissario", "capo1", "changeur1", "auditor", "direzione"):
        out += [(role, "GET", p) for p in api + pages]
    out += [("auditor", "POST", p) for p in posts]
    del count
    return out


def measure(args) -> None:
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    User = get_user_model()
    clients = {}
    results = []
    for role, method, path in targets():
        if role not in clients:
            clients[role] = Client(HTTP_HOST="127.0.0.1")
            clients[role].force_login(User.objects.get(username=f"{CASINO}-{role}"))
            clients[role].get("/api/me/")  # warm: the first request's imports, the user's roles
        client = clients[role]
        best, queries, status, size = None, 0, 0, 0
        for _ in range(args.repeat):
            cache.clear()  # the verify throttle
            with CaptureQueriesContext(connection) as ctx:
                started = time.perf_counter()
                response = client.post(path, content_type="application/json") if method == "POST" else client.get(path)
                body = b"".join(response.streaming_content) if response.streaming else response.content
                spent = time.perf_counter() - started
            best = spent if best is None else min(best, spent)
            queries, status, size = len(ctx.captured_queries), response.status_code, len(body)
        results.append({"role": role, "method": method, "path": path, "status": status, "queries": queries,
                        "ms": round(best * 1000, 1), "bytes": size})  # fmt: skip
        print(f"{role:12} {method:4} {path:70} {status} {queries:4}q {best * 1000:8.1f} ms {size:>9,} B", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def compare(args) -> None:
    """Two `measure --json` files side by side, by role and path (ids and values masked)."""
    import re

    def key(r: dict) -> tuple[str, str, str]:
        path, _, query = r["path"].partition("?")
        return r["role"], r["method"], re.sub(r"\d+", "#", path) + ("?" + re.sub(r"=[^&]*", "=", query) if query else "")

    small = {key(r): r for r in json.loads(Path(args.small).read_text())}
    print(f"{'role':12} {'':4} {'path':58} {'status':>7} {'queries':>11} {'ms':>17} {'bytes':>19}")
    for r in json.loads(Path(args.season).read_text()):
        a = small.get(key(r))
        if a is None:
            continue
        flag = "  <- queries grow" if a["queries"] != r["queries"] else ""
        print(f"{key(r)[0]:12} {key(r)[1]:4} {key(r)[2]:58} {a['status']:>3}/{r['status']:<3} "
              f"{a['queries']:>5}/{r['queries']:<5} {a['ms']:>8}/{r['ms']:<8} {a['bytes']:>9,}/{r['bytes']:<9,}{flag}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seed")
    s.add_argument("--days", type=int, default=100)
    s.add_argument("--tables", type=int, default=7)
    s.add_argument("--coups", type=int, default=40, help="fewest coups per table and day (40)")
    s.add_argument("--coups-max", type=int, default=80)
    s.add_argument("--open-coups", type=int, default=10, help="coups per table on the open last day")
    s.add_argument("--patrons", type=int, default=300)
    s.add_argument("--seed", default="season")
    m = sub.add_parser("measure")
    m.add_argument("--repeat", type=int, default=3)
    m.add_argument("--json")
    c = sub.add_parser("compare", help="a small database's figures beside the season's")
    c.add_argument("small")
    c.add_argument("season")
    args = parser.parse_args()
    if args.cmd == "compare":
        compare(args)
        return 0
    url = os.environ.get("DATABASE_URL") or DEFAULT_URL.replace("bench_coups", "season")
    os.environ["DATABASE_URL"] = url
    ensure_database(url)
    import django

    django.setup()
    if args.cmd == "seed":
        seed(args)
    else:
        measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
