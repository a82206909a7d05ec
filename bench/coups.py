"""Benchmark of the coup API under load: K tablets recording whole coups over HTTP (run by hand).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chemin_bench_coups \\
        .venv/bin/python bench/coups.py --tablets 16 --seconds 20

NOTE: this WRITES to the database named by DATABASE_URL (default: chemin_bench_coups on the
local PostgreSQL). It creates that database if it does not exist and migrates it; each run
seeds a new casino (its own tables, sessions, users and tokens), so runs never collide.

What it does:
1. seeds K venezia tables, each with an open session, 8 seated patrons, its own Capo Partita
   and his API token, the first shoe loaded and a first bank of 1000.00;
2. serves the app with gunicorn (config.wsgi, settings base, DEBUG off, persistent database
   connections, gthread workers) on 127.0.0.1 only;
3. phase "coups": K tablet threads, one per table, each with a keep-alive http.client
   connection, record whole coups for T seconds with the one-shot endpoint
   (POST /api/sessions/{id}/coups/record/, a unique Idempotency-Key each): 1 to 3 bettors,
   the cards dealt from a real shuffled 6-deck shoe kept by the tablet, the punta and the
   banker drawing as a player would; a new bank after a lost one, a new shoe once the stop
   card appears (as the answer's game state says);
4. phase "trivial": the same K threads on GET /api/me/ (authenticated: the token with its user
   and roles, one query) for T seconds;
4b. phase "paced" (--paced S, default 2; 0 skips it): the K tablets go on recording coups at
   their tables, each one coup every S seconds instead of back to back, for T seconds: the
   latency a tablet sees below saturation, counted from when each coup was due (a tablet that
   falls behind shows its whole wait). A real table records about one coup a minute;
5. prints coups/s, p50/p95/p99 latency and errors for both, their ratio, the targets
   (p95 < 100 ms, coups/s >= 1/4 of the trivial endpoint's, zero errors: for the back-to-back
   phase), the paced phase's figures, and checks that every coup of both coup phases was
   recorded exactly once (rows vs successful answers, ids and keys unique);
   with each phase, the CPU time the app server (gunicorn's processes) and PostgreSQL spent
   per coup and per request (from /proc), which says where a coup's cost goes, and the
   bounds these put on the targets (the ratio that PostgreSQL's share of a coup alone
   allows; the CPU per coup a 100 ms wait needs).

Options: --tablets (16) --seconds (30) --workers (gunicorn processes, 3) --threads (per
worker, 6) --port (8765) --bettors (max per coup, 3) --paced (seconds between a tablet's
coups in the paced phase, 2; 0 skips it) --profile (one worker under cProfile, the top
functions printed at the end).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/chemin_bench_coups"

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
VALUE = {r: (i + 1 if i < 9 else 0) for i, r in enumerate(RANKS)}


def ensure_database(url: str) -> None:
    import dj_database_url
    import psycopg
    from psycopg import sql

    cfg = dj_database_url.parse(url)
    if "postgresql" not in cfg["ENGINE"]:
        raise SystemExit("the benchmark needs PostgreSQL (row locks, real concurrency)")
    params = {k.lower(): cfg.get(k) or None for k in ("HOST", "PORT", "USER", "PASSWORD")}
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (cfg["NAME"],)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(cfg["NAME"])))
            print(f"created database {cfg['NAME']}")


# --------------------------------------------------------------------------- seeding


def seed(k: int, run: str) -> list[dict]:
    """K tables, each with an open session, 8 seated patrons, a shoe and a bank."""
    from floor import services as floor
    from floor.authentication import issue_token
    from floor.models import Casino, Patron, Site
    from floor.roles import Role
    from tables import services as tables
    from tests.factories import PatronFactory, UserFactory

    direzione = UserFactory(username=f"bench-{run}-direzione", roles=[Role.DIREZIONE])
    commissario = UserFactory(username=f"bench-{run}-commissario", roles=[Role.COMMISSARIO])
    casino = Casino.objects.create(name=f"Bench {run}", code=f"bench-{run}")
    site = Site.objects.create(casino=casino, name="Sala")
    floor.gaming_day_open(casino=casino, by=commissario)
    out = []
    for n in range(1, k + 1):
        capo = UserFactory(username=f"bench-{run}-capo-{n}", roles=[Role.CAPO_PARTITA])
        changeur = UserFactory(username=f"bench-{run}-changeur-{n}", roles=[Role.CHANGEUR])  # one per table
        token, _ = issue_token(capo)
        table = floor.table_create(casino=casino, site=site, number=n, by=direzione, profile="venezia")
        session = floor.table_session_open(
            table=table, by=commissario, capo_partita=capo, changeur=changeur,
            shoe_number=f"B{n}-1", minimum=100_00,
        )  # fmt: skip
        patrons = []
        for seat in range(1, 9):
            patron = PatronFactory(document_number=f"B{run}{n:03d}{seat}", created_by=commissario)
            floor.seat_assign(session=session, patron=patron, seat_number=seat, by=commissario)
            patrons.append(patron.pk)
        tables.shoe_load(session=session, by=capo)
        tables.bank_open(session=session, by=capo, patron=Patron.objects.get(pk=patrons[0]), amount=1000_00)
        out.append({"table": n, "session": session.pk, "token": token, "patrons": patrons, "capo": capo.pk})
    return out


# --------------------------------------------------------------------------- the server


def start_server(args, env: dict) -> tuple[subprocess.Popen, str | None]:
    gunicorn = str(ROOT / ".venv" / "bin" / "gunicorn")
    profile_dir = None
    cmd = [
        gunicorn, "config.wsgi:application", "--bind", f"127.0.0.1:{args.port}",
        "--workers", str(args.workers), "--threads", str(args.threads), "--worker-class", args.worker_class,
        "--keep-alive", "30", "--backlog", "256", "--log-level", "warning", "--chdir", str(ROOT),
    ]  # fmt: skip
    if args.profile:
        # One worker profiled with cProfile (all its threads), dumped when it exits.
        profile_dir = tempfile.mkdtemp(prefix="chemin-bench-prof-")
        conf = Path(profile_dir) / "gunicorn_profile.py"
        conf.write_text(_PROFILE_CONF.format(out=str(Path(profile_dir) / "worker.prof")))
        cmd += ["--config", str(conf)]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=2)
            conn.request("GET", "/api/me/")
            conn.getresponse().read()
            return proc, profile_dir
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not start")


_PROFILE_CONF = """
import cProfile
import pstats

_items = []


def post_worker_init(worker):
    if worker.age != 1:  # the first worker only
        return
    # gthread runs each request in a pool thread: profile every work item, sum at exit.
    import concurrent.futures.thread as cft

    original = cft._WorkItem.run

    def run(self):
        prof = cProfile.Profile()
        prof.enable()
        try:
            return original(self)
        finally:
            prof.disable()
            _items.append(prof)

    cft._WorkItem.run = run


def worker_exit(server, worker):
    if _items:
        stats = pstats.Stats(_items[0])
        for item in _items[1:]:
            stats.add(item)
        stats.dump_stats("{out}")
"""


def stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # the group we started (start_new_session)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# --------------------------------------------------------------------------- a tablet


def value(card: str) -> int:
    return VALUE[card[:-1]]


def plan_coup(shoe: list[str]) -> tuple[list[str], bool | None]:
    """The cards a coup takes from the top of `shoe` and the punta's declaration, with the
    punta drawing on 0-4 and the banker drawing on 0-5 (free at venezia when not declared)."""
    c = shoe[:6]
    punta = (value(c[0]) + value(c[2])) % 10
    banker = (value(c[1]) + value(c[3])) % 10
    if punta >= 8:
        return c[:4], None
    draws = punta <= 4
    if banker >= 8:
        return c[:4], draws
    used = 5 if draws else 4
    return c[: used + (1 if banker <= 5 else 0)], draws


class Tablet(threading.Thread):
    def __init__(
        self, table: dict, port: int, run: str, until: float, bettors: int, trivial: bool, interval: float = 0
    ):
        super().__init__(daemon=True)
        self.t, self.port, self.run_id, self.until, self.max_bettors = table, port, run, until, bettors
        self.trivial = trivial
        self.interval = interval  # > 0: one coup every `interval` seconds (paced), not back to back
        self.due: float | None = None  # paced: when the coup being recorded was due
        self.rng = random.Random(f"{run}:{table['table']}")
        self.latencies: list[float] = []
        self.errors: Counter = Counter()
        self.coup_ids: list[int] = []
        self.keys: list[str] = []
        self.other_requests = 0
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Token {table['token']}", "Content-Type": "application/json"}
        self.shoe: list[str] = self.new_shoe()
        self.shoes = 1
        self.banker_seat = 1
        self.bank = 1000_00
        self.n = 0

    def new_shoe(self) -> list[str]:
        cards = [r + s for r in RANKS for s in "SHDC" for _ in range(6)]
        self.rng.shuffle(cards)
        return cards

    def request(self, method: str, path: str, body=None, key: str | None = None) -> tuple[int, dict, float]:
        headers = dict(self.headers)
        if key:
            headers["Idempotency-Key"] = key
        data = None if body is None else json.dumps(body)
        started = time.perf_counter()
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (http.client.HTTPException, OSError):
                # The server closed the keep-alive connection: reconnect, same key (idempotent).
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise
        elapsed = time.perf_counter() - started
        return response.status, (json.loads(raw) if raw else {}), elapsed

    def run(self) -> None:
        try:
            if self.interval:
                self.paced()
                return
            while time.time() < self.until:
                if self.trivial:
                    status, body, elapsed = self.request("GET", "/api/me/")
                    self.record(status, body, elapsed)
                else:
                    self.one_coup()
        except Exception as exc:  # counted, never silent
            self.errors[f"exception:{type(exc).__name__}:{exc}"] += 1
        finally:
            self.conn.close()

    def carry_on(self, until: float, interval: float) -> Tablet:
        """A new tablet thread for the same table that picks up where this one stopped: the
        shoe in its hand, the banker, the bank and the coup count (its keys go on from there)."""
        after = Tablet(self.t, self.port, self.run_id, until, self.max_bettors, False, interval)
        after.rng, after.shoe, after.shoes = self.rng, self.shoe, self.shoes
        after.banker_seat, after.bank, after.n = self.banker_seat, self.bank, self.n
        return after

    def paced(self) -> None:
        """One coup every `interval` seconds from a random phase: the latency counts from when
        the coup was due, so a tablet that falls behind shows its whole wait."""
        due = time.perf_counter() + self.rng.uniform(0, self.interval)
        while time.time() < self.until:
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.due = due
            self.one_coup()
            due += self.interval

    def record(self, status: int, body: dict, elapsed: float) -> bool:
        if self.due is not None:
            elapsed = time.perf_counter() - self.due
        self.latencies.append(elapsed)
        if status >= 300:
            self.errors[f"{status}:{body.get('error', {}).get('code', '?')}"] += 1
            return False
        return True

    def one_coup(self) -> None:
        sid, patrons = self.t["session"], self.t["patrons"]
        cards, punta_draws = plan_coup(self.shoe)
        others = [p for i, p in enumerate(patrons) if i + 1 != self.banker_seat]
        chosen = self.rng.sample(others, self.rng.randint(1, self.max_bettors))
        bets, left = [], self.bank
        for patron in chosen:
            amount = min(left, self.rng.randint(10, 300) * 100)
            if amount <= 0:
                break
            bets.append({"patron": patron, "amount": amount})
            left -= amount
        body = {"bets": bets, "cards": cards}
        if punta_draws is not None:
            body["punta_draws"] = punta_draws
        self.n += 1
        key = f"bench:{self.run_id}:t{self.t['table']}:c{self.n}"
        status, answer, elapsed = self.request("POST", f"/api/sessions/{sid}/coups/record/", body, key)
        if not self.record(status, answer, elapsed):
            return
        self.keys.append(key)
        self.coup_ids.append(answer["coup"]["id"])
        del self.shoe[: len(cards)]
        game = answer["game"]
        if game["shoe"]["stop_card_reached"]:
            self.shoes += 1
            status, answer, _ = self.request(
                "POST", f"/api/sessions/{sid}/shoes/", {"number": f"B{self.t['table']}-{self.shoes}"},
                f"bench:{self.run_id}:t{self.t['table']}:shoe{self.shoes}",
            )  # fmt: skip
            self.other_requests += 1
            if status != 201:
                self.errors[f"shoe:{status}:{answer.get('error', {}).get('code')}"] += 1
                return
            self.shoe = self.new_shoe()
            game = answer["game"]
        if game["bank"] is None:  # the punta won: the bank passes to the next seat (RULES.md §5)
            for _ in range(8):
                self.banker_seat = self.banker_seat % 8 + 1
                status, answer, _ = self.request(
                    "POST", f"/api/sessions/{sid}/banks/",
                    {"patron": patrons[self.banker_seat - 1], "amount": 1000_00},
                    f"bench:{self.run_id}:t{self.t['table']}:bank{self.n}:{self.banker_seat}",
                )  # fmt: skip
                self.other_requests += 1
                if status == 201:
                    self.bank = answer["bank"]["amount"]
                    return
            self.errors[f"bank:{status}:{answer.get('error', {}).get('code')}"] += 1
        else:
            self.bank = game["bank"]["amount"]


def cpu_seconds(server_pgid: int) -> dict[str, float]:
    """CPU time (user + system) used so far by the app server (gunicorn's process group) and
    by PostgreSQL's processes, from /proc (Linux; empty elsewhere). Sampled around a phase:
    the difference is what the phase cost each of them."""
    out = {"gunicorn": 0.0, "postgres": 0.0}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()  # from field 3 (state) on
        used = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15)
        if int(fields[2]) == server_pgid:  # pgrp (field 5)
            out["gunicorn"] += used
        elif name == "postgres" or name.startswith("postgres:"):
            out["postgres"] += used
    return out


def run_phase(
    tables, args, run: str, trivial: bool, server_pgid: int, interval: float = 0, after: list[Tablet] | None = None
) -> tuple[float, list[Tablet], dict]:
    until = time.time() + args.seconds
    if after:  # the tables' play goes on from the tablets of an earlier phase
        tablets = [tablet.carry_on(until, interval) for tablet in after]
    else:
        tablets = [Tablet(t, args.port, run, until, args.bettors, trivial, interval) for t in tables]
    before = cpu_seconds(server_pgid)
    started = time.perf_counter()
    for tablet in tablets:
        tablet.start()
    for tablet in tablets:
        tablet.join()
    seconds = time.perf_counter() - started
    after = cpu_seconds(server_pgid)
    return seconds, tablets, {k: after[k] - before[k] for k in after}


def cpu_line(label: str, cpu: dict[str, float], seconds: float, done: int, unit: str) -> None:
    if not done or not any(cpu.values()):
        return
    print(
        f"{'':9} CPU per {unit}: app server {cpu['gunicorn'] / done * 1000:5.1f} ms, PostgreSQL "
        f"{cpu['postgres'] / done * 1000:5.1f} ms (cores busy: app {cpu['gunicorn'] / seconds:.2f}, "
        f"PostgreSQL {cpu['postgres'] / seconds:.2f}; {label})"
    )


def figures(label: str, seconds: float, tablets: list[Tablet], unit: str) -> tuple[float, float, int]:
    lat = sorted(t for tablet in tablets for t in tablet.latencies)
    errors = sum((tablet.errors for tablet in tablets), Counter())
    ok = len(lat) - sum(errors.values())
    rate = ok / seconds
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else [max(lat or [0])] * 99
    print(
        f"{label:<9} {ok:>7} {unit} in {seconds:5.1f}s = {rate:8.1f}/s   latency p50 {q[49] * 1000:6.1f} ms  "
        f"p95 {q[94] * 1000:6.1f} ms  p99 {q[98] * 1000:6.1f} ms   errors {sum(errors.values())}"
    )
    for code, n in errors.most_common(8):
        print(f"          error {code}: {n}")
    return rate, q[94], sum(errors.values())


def bounds(
    tablets: int, coup_rate: float, coup_seconds: float, coup_cpu: dict[str, float],
    me_rate: float, me_seconds: float, me_cpu: dict[str, float],
) -> None:  # fmt: skip
    """What the CPU figures say the targets need. Both back-to-back phases keep the machine's
    cores busy, so each rate is the cores divided by the CPU per request, and the ratio is
    the trivial request's CPU over the coup's; PostgreSQL's share of a coup alone bounds it.
    With K tablets recording back to back a coup waits K / rate on average (Little's law)."""
    coups, requests = round(coup_rate * coup_seconds), round(me_rate * me_seconds)
    if not (coups and requests and coup_cpu["postgres"] and me_cpu["gunicorn"]):
        return  # no figures (no /proc, or a phase with no success)
    coup = (coup_cpu["gunicorn"] + coup_cpu["postgres"]) / coups
    request = (me_cpu["gunicorn"] + me_cpu["postgres"]) / requests
    database = coup_cpu["postgres"] / coups
    cores = os.cpu_count() or 1
    print(
        f"\nbounds: ratio ~ CPU per GET /api/me/ / CPU per coup = {request * 1000:.1f} / {coup * 1000:.1f} ms = "
        f"{request / coup:.3f}; with no app server CPU at all, PostgreSQL's {database * 1000:.1f} ms per coup "
        f"would still cap it at {request / database:.3f}.\n"
        f"        {tablets} tablets back to back wait {tablets} / {coup_rate:.1f} coups/s = "
        f"{tablets / coup_rate * 1000:.0f} ms on average; 100 ms needs {tablets / 0.1:.0f} coups/s, "
        f"{cores / (tablets / 0.1) * 1000:.1f} ms of CPU per coup on {cores} cores (now {coup * 1000:.1f})."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tablets", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes (default 3)")
    parser.add_argument("--threads", type=int, default=6, help="threads per worker (default 6)")
    parser.add_argument(
        "--worker-class", default="gthread", choices=("gthread", "sync"),
        help="gunicorn worker class (default gthread; sync ignores --threads and closes each connection)",
    )  # fmt: skip
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--bettors", type=int, default=3, help="at most this many bettors per coup")
    parser.add_argument("--profile", action="store_true", help="profile one worker with cProfile")
    parser.add_argument(
        "--paced", type=float, default=2.0,
        help="then each tablet records one coup every PACED seconds, for the latency below saturation "
        "(default 2.0; 0 skips the phase)",
    )  # fmt: skip
    args = parser.parse_args()

    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_DEBUG"] = "0"
    ensure_database(url)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    run = uuid.uuid4().hex[:8]
    started = time.perf_counter()
    tables = seed(args.tablets, run)
    print(f"run {run}: seeded {len(tables)} tables in {time.perf_counter() - started:.1f}s; "
          f"gunicorn {args.workers} {args.worker_class} workers x {args.threads} threads; "
          f"{os.cpu_count()} cores")  # fmt: skip
    connection.close()

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "DJANGO_DEBUG": "0",
           "DATABASE_URL": url, "DATABASE_CONN_MAX_AGE": "600", "LOG_LEVEL": "WARNING"}  # fmt: skip
    env.pop("REDIS_URL", None)  # the coup path does not use the cache; keep Redis out of the figures
    server, profile_dir = start_server(args, env)
    try:
        coup_seconds, coup_tablets, coup_cpu = run_phase(tables, args, run, False, server.pid)
        me_seconds, me_tablets, me_cpu = run_phase(tables, args, run, True, server.pid)
        paced = None
        if args.paced > 0:
            paced = run_phase(tables, args, run, False, server.pid, args.paced, after=coup_tablets)
    finally:
        stop_server(server)

    print()
    coup_rate, coup_p95, coup_errors = figures("coups", coup_seconds, coup_tablets, "coups")
    me_rate, _me_p95, me_errors = figures("GET /me", me_seconds, me_tablets, "requests")
    others = sum(t.other_requests for t in coup_tablets)
    print(f"          (also {others} bank / shoe requests during the coup phase, not in the figures)")
    cpu_line("bank / shoe requests included", coup_cpu, coup_seconds, round(coup_rate * coup_seconds), "coup")
    cpu_line("GET /api/me/", me_cpu, me_seconds, round(me_rate * me_seconds), "request")
    paced_p95 = None
    if paced is not None:
        paced_seconds, paced_tablets, paced_cpu = paced
        print(f"\npaced: each tablet one coup every {args.paced:g} s (a busy table records about one a minute); "
              "latency from when each coup was due")  # fmt: skip
        paced_rate, paced_p95, paced_errors = figures("coups", paced_seconds, paced_tablets, "coups")
        cpu_line("bank / shoe requests included", paced_cpu, paced_seconds, round(paced_rate * paced_seconds), "coup")
        coup_errors += paced_errors

    # Every coup recorded exactly once (both coup phases).
    from floor.models import IdempotencyKey
    from tables.models import Coup

    recorders = coup_tablets + (paced[1] if paced is not None else [])
    ids = [i for t in recorders for i in t.coup_ids]
    keys = [k for t in recorders for k in t.keys]
    rows = Coup.objects.filter(session_id__in=[t["session"] for t in tables])
    stored = IdempotencyKey.objects.filter(key__in=keys).count()
    exact = rows.count() == len(ids) == len(set(ids)) and set(rows.values_list("pk", flat=True)) == set(ids)
    unique_keys = len(keys) == len(set(keys)) == stored
    settled = rows.exclude(state="settled").count() == 0
    print(f"\ncheck: {rows.count()} coup rows, {len(ids)} successful answers, {len(set(ids))} distinct ids: "
          f"{'exactly once' if exact else 'MISMATCH'}; {stored} stored keys for {len(keys)} sent: "
          f"{'unique' if unique_keys else 'MISMATCH'}; every coup settled: {settled}")  # fmt: skip

    ratio = coup_rate / me_rate if me_rate else 0
    print(
        f"\ntargets: p95 {coup_p95 * 1000:.1f} ms < 100 ms: {'ok' if coup_p95 < 0.1 else 'MISSED'};  "
        f"coups/s / GET-me/s = {ratio:.3f} >= 0.25: {'ok' if ratio >= 0.25 else 'MISSED'};  "
        f"errors {coup_errors + me_errors}: {'ok' if coup_errors + me_errors == 0 else 'MISSED'}"
    )
    if paced_p95 is not None:
        print(f"         (paced, one coup every {args.paced:g} s per tablet: p95 {paced_p95 * 1000:.1f} ms; "
              "the targets above are for the back-to-back phase)")  # fmt: skip
    bounds(args.tablets, coup_rate, coup_seconds, coup_cpu, me_rate, me_seconds, me_cpu)
    if profile_dir:
        import pstats

        prof = Path(profile_dir) / "worker.prof"
        if prof.exists():
            print(f"\nprofile of one worker ({prof}):")
            pstats.Stats(str(prof)).sort_stats("cumulative").print_stats(40)
    return 0 if exact and unique_keys else 1


if __name__ == "__main__":
    sys.exit(main())
