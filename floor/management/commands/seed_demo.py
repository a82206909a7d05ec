"""`manage.py seed_demo`: a demo floor of the Casinò di Venezia, through the services.

Idempotent: every step first looks for what it would create, so a second run changes
nothing. The floor is built with the same services the API calls, so the demo's audit trail
is the one a real evening would leave. Demo passwords are public: never run this on a
production database (it refuses when DEBUG is off, unless --force)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from config.errors import ApplicationError
from floor import services
from floor.models import Casino, GamingDay, Patron, Seat, Site, Table, TableSession
from floor.roles import Role

User = get_user_model()

CASINO = ("Casinò di Venezia", "venezia")
SITES = ("Ca' Vendramin Calergi", "Ca' Noghera")
# number, site index, seats, profile
TABLES = (
    (1, 0, 8, "venezia"),
    (2, 0, 8, "venezia"),
    (3, 0, 8, "venezia"),
    (4, 0, 9, "venezia"),  # the Grande Tavolo
    (5, 1, 8, "classic"),
)
# username, role, first name, last name
STAFF = (
    ("commissario", Role.COMMISSARIO, "Marco", "Foscari"),
    ("capo1", Role.CAPO_PARTITA, "Giulia", "Contarini"),
    ("capo2", Role.CAPO_PARTITA, "Paolo", "Grimani"),
    ("changeur", Role.CHANGEUR, "Elena", "Morosini"),
    ("changeur2", Role.CHANGEUR, "Nicolò", "Tron"),  # one changeur per table: a second one for a second table
    ("auditor", Role.AUDITOR, "Sara", "Bembo"),
    ("direzione", Role.DIREZIONE, "Alvise", "Mocenigo"),
    ("direzione2", Role.DIREZIONE, "Caterina", "Cornaro"),
)
# first, last, document type, number, nationality, birth date
PATRONS = (
    ("Lorenzo", "Zanetti", "id_card", "CA12345AB", "IT", dt.date(1968, 3, 14)),
    ("Francesca", "Barbarigo", "id_card", "CA23456BC", "IT", dt.date(1975, 7, 2)),
    ("Giovanni", "Vendramin", "passport", "YA1234567", "IT", dt.date(1959, 11, 23)),
    ("Chiara", "Dandolo", "id_card", "CA34567CD", "IT", dt.date(1982, 1, 30)),
    ("Antoine", "Lefèvre", "passport", "19FR45678", "FR", dt.date(1971, 5, 9)),
    ("Margaux", "Delacroix", "id_card", "FR0987654321", "FR", dt.date(1988, 9, 17)),
    ("Hans", "Vogel", "passport", "C01X00T47", "DE", dt.date(1964, 12, 5)),
    ("Charlotte", "Ashworth", "passport", "533380006", "GB", dt.date(1979, 4, 21)),
    ("Mikko", "Virtanen", "passport", "FP1234567", "FI", dt.date(1985, 8, 11)),
    ("João", "Carvalho", "passport", "CB123456", "PT", dt.date(1973, 2, 27)),
    ("Sofía", "Navarro", "id_card", "12345678Z", "ES", dt.date(1990, 6, 3)),
    ("Kenji", "Tanaka", "passport", "TZ1234567", "JP", dt.date(1966, 10, 19)),
)
SEATED = 7  # patrons 1-7 at seats 1-7 of table 1, the 8th standing


def demo_password(username: str) -> str:
    return f"chemin-demo-{username}"


class Command(BaseCommand):
    help = "Create the demo floor (idempotent): casino, sites, tables, staff, patrons, an open day and session."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="Run even with DEBUG off (demo passwords!).")

    def handle(self, *args, force: bool = False, **options):
        if not settings.DEBUG and not force:
            raise CommandError("seed_demo writes known passwords; it runs only with DEBUG on (or --force).")
        with transaction.atomic():
            admin = self._superuser()
            staff = self._staff()
            casino = Casino.objects.filter(code=CASINO[1]).first() or services.casino_create(
                name=CASINO[0], code=CASINO[1], by=admin
            )
            sites = [
                Site.objects.filter(casino=casino, name=name).first()
                or services.site_create(casino=casino, name=name, by=admin)
                for name in SITES
            ]
            tables = self._tables(casino, sites, staff["direzione"])
            patrons = self._patrons(staff["commissario"])
            self._floor(casino, tables[1], patrons, staff)
        self._print_logins()

    def _superuser(self):
        admin = User.objects.filter(username="admin").first()
        if admin is None:
            admin = User.objects.create_superuser("admin", "admin@example.invalid", demo_password("admin"))
            self.stdout.write("created superuser admin")
        return admin

    def _staff(self) -> dict:
        users = {}
        for username, role, first, last in STAFF:
            user = User.objects.filter(username=username).first()
            if user is None:
                user = User(username=username, first_name=first, last_name=last, email=f"{username}@example.invalid")
                # The Direzione works in the admin's back office (read-only floor views).
                user.is_staff = role == Role.DIREZIONE
                user.set_password(demo_password(username))
                user.save()
                self.stdout.write(f"created user {username}")
            group, _ = Group.objects.get_or_create(name=str(role))
            user.groups.add(group)
            users[username] = user
        return users

    def _tables(self, casino, sites, direzione) -> dict:
        tables = {}
        for number, site_index, seats, profile in TABLES:
            table = Table.objects.filter(casino=casino, number=number).first()
            if table is None:
                table = services.table_create(
                    casino=casino, site=sites[site_index], number=number, seats=seats, profile=profile, by=direzione
                )
                self.stdout.write(f"created table {number} ({profile}, {seats} seats)")
            tables[number] = table
        return tables

    def _patrons(self, commissario) -> list:
        patrons = []
        for first, last, doc_type, doc_number, nationality, birth in PATRONS:
            patron = Patron.objects.filter(document_type=doc_type, document_number=doc_number).first()
            if patron is None:
                patron = services.patron_register(
                    by=commissario,
                    first_name=first,
                    last_name=last,
                    document_type=doc_type,
                    document_number=doc_number,
                    nationality=nationality,
                    birth_date=birth,
                )
            patrons.append(patron)
        return patrons

    def _floor(self, casino, table, patrons, staff) -> None:
        commissario = staff["commissario"]
        if not GamingDay.objects.filter(casino=casino, closed_at__isnull=True).exists():
            try:
                day = services.gaming_day_open(casino=casino, by=commissario)
            except ApplicationError as exc:
                # The demo's day was closed (README, end of day) and the next cannot open yet:
                # serve the floor as it is; the Commissario opens the next day when he may.
                self.stdout.write(self.style.WARNING(f"no gaming day opened: {exc.code}: {exc.message}"))
                return
            self.stdout.write(f"opened gaming day {day.date}")
        session = TableSession.objects.filter(table=table).exclude(status=TableSession.Status.CLOSED).first()
        if session is not None:
            return  # the demo session exists: its seats are whatever the demo made of them since
        busy = set()  # one croupier and one changeur per table (RULES.md §6)
        for row in TableSession.objects.exclude(status=TableSession.Status.CLOSED).values_list(
            "capo_partita", "changeur"
        ):
            busy.update(row)
        capo = next((staff[name] for name in ("capo1", "capo2") if staff[name].pk not in busy), None)
        if capo is None:  # both run tables the demo did not make
            self.stdout.write(self.style.WARNING("no table session opened: every demo Capo Partita runs a table"))
            return
        changeur = next((staff[name] for name in ("changeur", "changeur2") if staff[name].pk not in busy), None)
        if changeur is None:
            self.stdout.write(self.style.WARNING("no table session opened: every demo changeur works at a table"))
            return
        session = services.table_session_open(
            table=table,
            by=commissario,
            capo_partita=capo,
            changeur=changeur,
            shoe_number="S-101",
            minimum=100_00,
        )
        self.stdout.write(f"opened session {session.number} on table {table.number}")
        for seat_number, patron in enumerate(patrons[:SEATED], start=1):
            if not Seat.objects.filter(patron=patron, left_at__isnull=True).exists():
                services.seat_assign(session=session, patron=patron, seat_number=seat_number, by=commissario)
        standing = patrons[SEATED]
        if not Seat.objects.filter(patron=standing, left_at__isnull=True).exists():
            services.seat_assign(session=session, patron=standing, standing=True, by=commissario)

    def _print_logins(self) -> None:
        self.stdout.write(self.style.SUCCESS("\nDemo logins (demo only; never use these passwords elsewhere):"))
        for username, role, *_ in (("admin", "superuser"), *STAFF):
            self.stdout.write(f"  {username:<12} {demo_password(username):<28} {role}")
