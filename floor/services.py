"""The floor's use cases (RULES.md §6). One transaction each, the locks first, the audit
event inside the transaction, ApplicationError with a stable code when a rule refuses.

Lock order, everywhere: gaming day -> table -> table session -> patron. Taking locks in one
order is what keeps two use cases from deadlocking on each other.

Authorization (which role may call what) is the API's job (floor/permissions.py); the
services check meaning: states, ranges, and the roles of the staff *assigned* to a session."""

from __future__ import annotations

import datetime as dt
import logging
import unicodedata
from typing import Any

import iso3166
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from audit.models import AuditStream
from audit.services import record
from config.errors import ApplicationError, Conflict, NotAllowed, clean_text
from tables.engine.profiles import PROFILES, Rounding

from .hooks import (
    run_after_seat_release,
    run_after_session_resume,
    run_before_gaming_day_open,
    run_before_seat_release,
    run_before_session_close,
)
from .models import (
    MAX_STAKE_CENTS,
    MIN_STAKE_CENTS,
    Casino,
    GamingDay,
    MinimumChange,
    Patron,
    Seat,
    SessionInterruption,
    Site,
    StaffChange,
    Table,
    TableSession,
    rate_to_bp,
)
from .roles import Role, has_role
from .selectors import gaming_days_due_for_close

logger = logging.getLogger(__name__)

User = AbstractBaseUser

# --------------------------------------------------------------------------- casinos


@transaction.atomic
def casino_create(*, name: str, code: str, by: User) -> Casino:
    if Casino.objects.filter(code=code).exists():
        raise Conflict("casino_code_taken", "A casino with this code exists.", details={"code": code})
    casino = Casino.objects.create(name=name, code=code)
    record(
        stream=casino.audit_stream,
        actor=by,
        action="casino.created",
        subject=casino,
        data={"new": {"name": name, "code": code}},
    )
    return casino


@transaction.atomic
def site_create(*, casino: Casino, name: str, by: User) -> Site:
    casino = Casino.objects.select_for_update().get(pk=casino.pk)
    if casino.sites.filter(name=name).exists():
        raise Conflict("site_name_taken", "This casino has a site with this name.", details={"name": name})
    site = Site.objects.create(casino=casino, name=name)
    record(
        stream=casino.audit_stream,
        actor=by,
        action="site.created",
        subject=site,
        data={"new": {"name": name}},
    )
    return site


# --------------------------------------------------------------------------- tables

TABLE_FIELDS = (
    "site",
    "number",
    "seats",
    "profile",
    "decks",
    "cagnotte_rate_bp",
    "cagnotte_unit_cents",
    "cagnotte_rounding",
    "min_seats_to_start",
    "active",
)


def _table_values(table: Table) -> dict[str, Any]:
    values = {f: getattr(table, f) for f in TABLE_FIELDS if f != "site"}
    values["site"] = table.site_id
    return values


# The largest cagnotte rounding unit, in cents (100 euros); a unit must divide it.
CAGNOTTE_UNIT_MAX = 10_000


def _table_validate(table: Table) -> None:
    """The meaning of a table's settings; the shape was checked by the serializer."""
    if table.site.casino_id != table.casino_id:
        raise ApplicationError(
            "site_not_in_casino", "The site belongs to another casino.", details={"site": table.site_id}
        )
    if table.profile not in PROFILES:
        raise ApplicationError(
            "unknown_profile", "Unknown rule profile.", details={"profile": table.profile, "known": sorted(PROFILES)}
        )
    if table.seats not in (8, 9):
        # RULES.md §6: 8 seats, the Grande Tavolo 9.
        raise ApplicationError("seats_out_of_range", "A table has 8 or 9 seats.", details={"seats": table.seats})
    profile = PROFILES[table.profile]
    # RULES.md §3.2: 6 decks; classic (and punto banco) allow 8 (Profile.allowed_decks).
    if table.decks not in profile.allowed_decks:
        raise ApplicationError(
            "decks_not_allowed",
            "This profile does not allow this number of decks.",
            details={"decks": table.decks, "allowed": list(profile.allowed_decks)},
        )
    if not 1 <= table.min_seats_to_start <= table.seats:
        raise ApplicationError(
            "min_seats_out_of_range",
            "The seats needed to start must be between 1 and the table's seats.",
            details={"min_seats_to_start": table.min_seats_to_start, "seats": table.seats},
        )
    if not 0 <= table.cagnotte_rate_bp < 10_000:
        # The cagnotte is a share of the banker's win (RULES.md §4): under 100%, which the
        # engine refuses (bad_rate) and would leave every banker's win unsettled.
        raise ApplicationError(
            "cagnotte_rate_out_of_range", "The cagnotte rate is 0 to 9999 basis points (under 100%).",
            details={"cagnotte_rate_bp": table.cagnotte_rate_bp},
        )
    if not profile.cagnotte_set_by_house and table.cagnotte_rate_bp != rate_to_bp(profile.cagnotte_rate):
        # RULES.md §3.2: the private games' rules take no cagnotte; a rate would levy on
        # every banker's win what the game does not owe the house.
        raise ApplicationError(
            "cagnotte_not_in_profile",
            "This profile's rules take no cagnotte; its tables have a rate of 0.",
            details={"profile": table.profile, "cagnotte_rate_bp": table.cagnotte_rate_bp},
        )
    if not 1 <= table.cagnotte_unit_cents <= CAGNOTTE_UNIT_MAX or CAGNOTTE_UNIT_MAX % table.cagnotte_unit_cents:
        # RULES.md §4: the levy is rounded to a coin-like unit (10 cents by default). A unit
        # is 1 cent to 100 euros and divides 100 euros (1, 2, 5, 10, 20, 25, 50, 100... cents),
        # so whole euros of stake round onto it; an absurd unit (1,000 euros) would round
        # every levy to 0 or to more than the win, which the engine then caps (settlement).
        raise ApplicationError(
            "cagnotte_unit_out_of_range",
            "The rounding unit is 1 to 10000 cents (100 euros) and divides 10000 cents.",
            details={"cagnotte_unit_cents": table.cagnotte_unit_cents, "maximum": CAGNOTTE_UNIT_MAX},
        )
    if table.cagnotte_rounding not in {r.value for r in Rounding}:
        raise ApplicationError("unknown_rounding", "Unknown rounding rule.")


@transaction.atomic
def table_create(
    *,
    casino: Casino,
    site: Site,
    number: int,
    by: User,
    seats: int = 8,
    profile: str = "venezia",
    decks: int | None = None,
    cagnotte_rate_bp: int | None = None,
    cagnotte_unit_cents: int | None = None,
    cagnotte_rounding: str | None = None,
    min_seats_to_start: int | None = None,
    active: bool = True,
) -> Table:
    # The casino row serializes table creation, so the number check below is race-free.
    casino = Casino.objects.select_for_update().get(pk=casino.pk)
    rules = PROFILES.get(profile)
    if rules is None:
        raise ApplicationError(
            "unknown_profile", "Unknown rule profile.", details={"profile": profile, "known": sorted(PROFILES)}
        )
    table = Table(
        casino=casino,
        site=site,
        number=number,
        seats=seats,
        profile=profile,
        # Unset settings come from the table's rule profile, not from venezia's.
        decks=rules.decks if decks is None else decks,
        cagnotte_rate_bp=rate_to_bp(rules.cagnotte_rate) if cagnotte_rate_bp is None else cagnotte_rate_bp,
        cagnotte_unit_cents=rules.cagnotte_unit if cagnotte_unit_cents is None else cagnotte_unit_cents,
        cagnotte_rounding=str(rules.cagnotte_rounding) if cagnotte_rounding is None else cagnotte_rounding,
        min_seats_to_start=rules.min_seats_taken if min_seats_to_start is None else min_seats_to_start,
        active=active,
    )
    _table_validate(table)
    if Table.objects.filter(casino=casino, number=number).exists():
        raise Conflict("table_number_taken", "This casino has a table with this number.", details={"number": number})
    table.save()
    record(
        stream=casino.audit_stream,
        actor=by,
        action="table.created",
        subject=table,
        data={"new": _table_values(table)},
    )
    return table


@transaction.atomic
def table_update(*, table: Table, by: User, **changes: Any) -> Table:
    """Change a table's settings. Refused while a session is in play: the session's coups
    were recorded under the settings it opened with (cagnotte rate, decks, seats)."""
    unknown = set(changes) - set(TABLE_FIELDS)
    if unknown:
        raise ApplicationError("invalid_input", "Unknown table fields.", details={"fields": sorted(unknown)})
    table = Table.objects.select_for_update().select_related("site").get(pk=table.pk)
    live = table.sessions.exclude(status=TableSession.Status.CLOSED).first()
    if live is not None:
        raise Conflict(
            "table_in_play",
            "The table has a session in play; close it before changing the table.",
            details={"session": live.pk},
        )
    old = _table_values(table)
    rules = PROFILES.get(changes.get("profile", table.profile))
    if "profile" in changes and "cagnotte_rate_bp" not in changes and rules and not rules.cagnotte_set_by_house:
        # A table moved to a game with no cagnotte takes none: the rate follows the profile
        # (and the change is on record with the rest).
        changes["cagnotte_rate_bp"] = rate_to_bp(rules.cagnotte_rate)
    for field, value in changes.items():
        setattr(table, field, value)
    _table_validate(table)
    if (
        "number" in changes
        and Table.objects.filter(casino_id=table.casino_id, number=table.number).exclude(pk=table.pk).exists()
    ):
        raise Conflict(
            "table_number_taken", "This casino has a table with this number.", details={"number": table.number}
        )
    new = _table_values(table)
    changed = {k for k in new if new[k] != old[k]}
    if not changed:
        return table
    table.save(update_fields=sorted(changed))
    record(
        stream=f"casino:{table.casino_id}",
        actor=by,
        action="table.updated",
        subject=table,
        data={"old": {k: old[k] for k in sorted(changed)}, "new": {k: new[k] for k in sorted(changed)}},
    )
    return table


# --------------------------------------------------------------------------- gaming days


@transaction.atomic
def gaming_day_open(*, casino: Casino, by: User, date: dt.date | None = None) -> GamingDay:
    # The casino row lock serializes two Commissari opening the day at once; the partial
    # unique index is the backstop.
    casino = Casino.objects.select_for_update().get(pk=casino.pk)
    date = date or timezone.localdate()
    open_day = GamingDay.objects.filter(casino=casino, closed_at__isnull=True).first()
    if open_day is not None:
        raise Conflict(
            "gaming_day_already_open",
            "The casino has an open gaming day; close it first.",
            details={"gaming_day": open_day.pk, "date": open_day.date.isoformat()},
        )
    today = timezone.localdate()
    if not today - dt.timedelta(days=1) <= date <= today + dt.timedelta(days=1):
        # The day opens on its date (the casino's local date); a day either side for an
        # opening around midnight. Never a date far off, which would sort every register.
        raise ApplicationError(
            "gaming_day_date_out_of_range",
            "A gaming day opens on its date: today, or the day before or after.",
            details={"date": date.isoformat(), "today": today.isoformat()},
        )
    if GamingDay.objects.filter(casino=casino, date=date).exists():
        raise Conflict(
            "gaming_day_exists", "A gaming day with this date exists already.", details={"date": date.isoformat()}
        )
    last = GamingDay.objects.filter(casino=casino).order_by("-date").values_list("date", flat=True).first()
    if last is not None and date < last:
        raise Conflict(
            "gaming_day_out_of_order",
            "A gaming day comes after the casino's last one.",
            details={"date": date.isoformat(), "last": last.isoformat()},
        )
    checks = run_before_gaming_day_open(casino=casino, date=date, by=by)
    day = GamingDay.objects.create(casino=casino, date=date, opened_at=timezone.now(), opened_by=by)
    data = {"casino": casino.pk, "date": date.isoformat(), "old": {"open": False},
            "new": {"open": True, "opened_at": day.opened_at.isoformat()}}  # fmt: skip
    if checks:
        data["checks"] = checks
    record(stream=day.audit_stream, actor=by, action="gaming_day.opened", subject=day, data=data)
    return day


# The end-of-day report is built by audit's Celery task. floor does not import audit's tasks
# (nor tables): it names the task. A signature by name resolves to the registered task when
# this process has it (so CELERY_TASK_ALWAYS_EAGER runs it in-process, for the demo and the
# tests) and is sent to the broker by name otherwise (Celery's send_task).
REPORT_BUILD_TASK = "audit.tasks.report_build"
CLOSE_OPEN_SESSIONS_CHOICES = ("refuse", "close")
ADULT_AGE = 18
EARLIEST_BIRTH_DATE = dt.date(1900, 1, 1)


def _enqueue_report_build(gaming_day_id: int) -> None:
    from celery import current_app

    try:
        current_app.signature(REPORT_BUILD_TASK, args=[gaming_day_id]).apply_async()
    except Exception as exc:
        if current_app.conf.task_always_eager:
            raise  # the build itself ran here and failed (make run, tests): not an enqueue failure
        # Redis (broker or result backend) is unreachable; the close has committed all the
        # same. With the Redis result backend Celery logs CRITICAL "Retry limit exceeded ...
        # The Celery application must be restarted." just before (its result consumer gave
        # up reconnecting): the process needs no restart, its next enqueue works once Redis
        # is back (bench/faults.py, redis). This is the line that says what happened, on one
        # line (Celery's message has line breaks, which log shippers split into entries).
        logger.error(
            "report enqueue failed for gaming day %s (%s: %s); reports_sweep will enqueue it",
            gaming_day_id, type(exc).__name__, " ".join(str(exc).split())[:200],
        )  # fmt: skip


@transaction.atomic
def gaming_day_close(*, gaming_day: GamingDay, by: User | None, open_sessions: str | None = None) -> GamingDay:
    """Close the gaming day; the end-of-day report is enqueued once the close commits.

    Sessions still in play are refused (`sessions_still_open`) or closed first through
    table_session_close, by `open_sessions` or else settings.GAMING_DAY_CLOSE_OPEN_SESSIONS.
    `by` is None when Celery beat closes the day at GAMING_DAY_CLOSE_HOUR."""
    policy = open_sessions or settings.GAMING_DAY_CLOSE_OPEN_SESSIONS
    if policy not in CLOSE_OPEN_SESSIONS_CHOICES:
        raise ApplicationError(
            "invalid_open_sessions_policy",
            "open_sessions is refuse or close.",
            details={"open_sessions": policy, "known": list(CLOSE_OPEN_SESSIONS_CHOICES)},
        )
    day = GamingDay.objects.select_for_update().get(pk=gaming_day.pk)
    if not day.is_open:
        raise Conflict("gaming_day_closed", "The gaming day is closed already.", details={"gaming_day": day.pk})
    # Sessions are opened under the day's lock, so none can appear after this check.
    live = list(day.sessions.exclude(status=TableSession.Status.CLOSED).select_related("table").order_by("pk"))
    if live and policy == "refuse":
        raise Conflict(
            "sessions_still_open",
            "Close every table session before closing the gaming day.",
            # the tables too, by number: the floor's page names them, as the staff call them
            details={"sessions": [s.pk for s in live], "tables": sorted({s.table.number for s in live})},
        )
    for session in live:  # policy "close": each closes as the Commissario would close it
        table_session_close(session=session, by=by)
    day.closed_at, day.closed_by = timezone.now(), by
    day.save(update_fields=["closed_at", "closed_by"])
    record(
        stream=day.audit_stream,
        actor=by,
        action="gaming_day.closed",
        subject=day,
        data={
            "old": {"open": True},
            "new": {"open": False, "closed_at": day.closed_at.isoformat()},
            "sessions_closed": [s.pk for s in live],
            "by_schedule": by is None,
        },
    )
    # robust: the day is closed whatever the broker says; the report sweeper
    # (audit.tasks.reports_sweep) enqueues a report missed here.
    day_id = day.pk
    transaction.on_commit(lambda: _enqueue_report_build(day_id), robust=True)
    return day


def gaming_days_close_due(*, now: dt.datetime | None = None) -> dict[str, list[int]]:
    """Celery beat: close every open day whose date is past by GAMING_DAY_CLOSE_HOUR
    (local time). Each day closes in its own transaction; a day refused (sessions in play
    under the "refuse" policy, or closed meanwhile) is left for the next run."""
    closed, refused = [], []
    due = gaming_days_due_for_close(now=now or timezone.now(), close_hour=settings.GAMING_DAY_CLOSE_HOUR)
    for day in list(due):
        try:
            gaming_day_close(gaming_day=day, by=None)
        except ApplicationError:
            refused.append(day.pk)
        else:
            closed.append(day.pk)
    return {"closed": closed, "refused": refused}


# --------------------------------------------------------------------------- table sessions


KEEP = object()  # table_minimum_change: the maximum stays as it is


def _check_stakes(*, minimum: int, maximum: int | None) -> None:
    # RULES.md §6 (art. 58): the minimum is never below 1 euro; an optional house maximum.
    if maximum is not None and not MIN_STAKE_CENTS <= maximum <= MAX_STAKE_CENTS:
        raise ApplicationError(
            "maximum_out_of_range",
            "The maximum must be at least 1 euro (100 cents) and at most 20,000,000 euro.",
            details={"maximum": maximum, "lowest": MIN_STAKE_CENTS, "highest": MAX_STAKE_CENTS},
        )
    if minimum < MIN_STAKE_CENTS or minimum > MAX_STAKE_CENTS or (maximum is not None and minimum > maximum):
        raise ApplicationError(
            "minimum_out_of_range",
            "The minimum must be at least 1 euro (100 cents), at most 20,000,000 euro, and not above the maximum.",
            details={"minimum": minimum, "maximum": maximum, "lowest": MIN_STAKE_CENTS, "highest": MAX_STAKE_CENTS},
        )


def _lock_session(session: TableSession) -> TableSession:
    return TableSession.objects.select_for_update().select_related("table").get(pk=session.pk)


def _check_staff(capo_partita: User, changeur: User) -> None:
    """RULES.md §6: one croupier and one changeur per table, each active and with that role
    (two people: floor.security keeps the two roles apart)."""
    for user in (capo_partita, changeur):
        if not user.is_active:
            raise ApplicationError(
                "user_inactive", "This member of staff's account is inactive.", details={"user": user.pk}
            )
    if not has_role(capo_partita, Role.CAPO_PARTITA):
        raise ApplicationError(
            "not_a_capo_partita", "This user is not a Capo Partita.", details={"capo_partita": capo_partita.pk}
        )
    if not has_role(changeur, Role.CHANGEUR):
        raise ApplicationError("not_a_changeur", "This user is not a changeur.", details={"changeur": changeur.pk})


def _check_staff_free(capo_partita: User, changeur: User, *, but: TableSession | None = None) -> None:
    """RULES.md §6: one croupier and one changeur per table, so each works at one table at a
    time (the changeur is "always near the table", seed 001), in either role (his roles may
    have changed since he took his table). Callers hold
    the gaming day's lock, which every session open and staff change takes."""
    for user, key, code, message in (
        (capo_partita, "capo_partita", "capo_partita_busy",
         "This Capo Partita works at another table's session; close it or relieve him there first."),
        (changeur, "changeur", "changeur_busy",
         "This changeur works at another table's session; close it or relieve him there first."),
    ):  # fmt: skip
        busy = TableSession.objects.filter(Q(capo_partita=user) | Q(changeur=user)).exclude(
            status=TableSession.Status.CLOSED
        )
        if but is not None:
            busy = busy.exclude(pk=but.pk)
        other = busy.select_related("table").first()
        if other is not None:
            role = "capo_partita" if other.capo_partita_id == user.pk else "changeur"
            raise Conflict(
                code,
                message,
                details={key: user.pk, "session": other.pk, "table": other.table.number, "as": role},
            )


@transaction.atomic
def table_session_open(
    *,
    table: Table,
    by: User,
    capo_partita: User,
    changeur: User,
    shoe_number: str,
    minimum: int,
    maximum: int | None = None,
) -> TableSession:
    # Lock order: gaming day, then table. The day lock also keeps gaming_day_close from
    # closing the day while this session is being opened.
    day = GamingDay.objects.select_for_update().filter(casino_id=table.casino_id, closed_at__isnull=True).first()
    if day is None:
        raise ApplicationError(
            "no_open_gaming_day", "The casino has no open gaming day.", details={"casino": table.casino_id},
            status_code=409,
        )
    table = Table.objects.select_for_update().get(pk=table.pk)
    if not table.active:
        raise ApplicationError("table_inactive", "The table is not active.", details={"table": table.pk})
    _check_staff(capo_partita, changeur)
    shoe_number = clean_text(shoe_number, TableSession, "shoe_number")
    if not shoe_number:
        raise ApplicationError("shoe_number_required", "The session's shoe number is required.")
    _check_stakes(minimum=minimum, maximum=maximum)
    live = table.sessions.exclude(status=TableSession.Status.CLOSED).first()
    if live is not None:
        raise Conflict(
            "table_session_already_open", "The table has a session in play.", details={"session": live.pk}
        )
    # A numbered shoe is at one table at a time (RULES.md §6); the day lock makes this check safe.
    shoe_busy = (
        TableSession.objects.filter(gaming_day=day, shoe_number__iexact=shoe_number)
        .exclude(status=TableSession.Status.CLOSED)
        .first()
    )
    if shoe_busy is not None:
        raise Conflict(
            "shoe_in_use",
            "This shoe is assigned to another table's session.",
            details={"shoe_number": shoe_number, "session": shoe_busy.pk},
        )
    _check_staff_free(capo_partita, changeur)
    last = table.sessions.filter(gaming_day=day).order_by("-number").values_list("number", flat=True).first()
    session = TableSession.objects.create(
        table=table,
        gaming_day=day,
        number=(last or 0) + 1,
        capo_partita=capo_partita,
        changeur=changeur,
        shoe_number=shoe_number,
        minimum=minimum,
        maximum=maximum,
        status=TableSession.Status.OPEN,
        opened_at=timezone.now(),
        opened_by=by,
    )
    at = session.opened_at
    record(
        stream=day.audit_stream,
        actor=by,
        action="table_session.opened",
        subject=session,
        data={
            "table": table.pk,
            "number": session.number,
            "old": {"status": None},
            "new": {
                "status": session.status,
                "capo_partita": capo_partita.pk,
                "changeur": changeur.pk,
                "shoe_number": shoe_number,
                "minimum": minimum,
                "maximum": maximum,
                "opened_at": at.isoformat(),
            },
        },
    )
    return session


def interruption_capacity(user: User) -> str:
    """The capacity `user` suspends play in: the Direzione's if he holds that role (one who
    holds both supervising roles acts as management), the Commissario's otherwise."""
    if has_role(user, Role.DIREZIONE):
        return SessionInterruption.Capacity.DIREZIONE
    return SessionInterruption.Capacity.COMMISSARIO


def may_resume(user: User, interrupted_as: str) -> bool:
    """RULES.md §6: the Direzione Giochi's decision is final; a suspension it ordered is lifted
    by the Direzione alone. The Commissario's, by any Commissario or the Direzione."""
    return interrupted_as != SessionInterruption.Capacity.DIREZIONE or has_role(user, Role.DIREZIONE)


@transaction.atomic
def table_session_interrupt(*, session: TableSession, by: User, reason: str) -> TableSession:
    """RULES.md §6: management may suspend play at any moment; art. 70 registers every
    interruption and resumption with its time. The interruption records the capacity it was
    ordered in (`interrupted_as`): one the Direzione ordered, only the Direzione resumes."""
    session = _lock_session(session)
    if session.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": session.pk})
    if not session.is_open:
        raise Conflict("session_not_open", "The table session is interrupted already.", details={"session": session.pk})
    reason = clean_text(reason, SessionInterruption, "reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why play is interrupted.")
    now = timezone.now()
    interruption = SessionInterruption.objects.create(
        session=session, interrupted_at=now, interrupted_by=by, interrupted_as=interruption_capacity(by), reason=reason
    )
    old, session.status = session.status, TableSession.Status.INTERRUPTED
    session.save(update_fields=["status"])
    record(
        stream=session.audit_stream,
        actor=by,
        action="table_session.interrupted",
        subject=session,
        data={
            "interruption": interruption.pk,
            "interrupted_as": interruption.interrupted_as,
            "reason": reason,
            "at": now.isoformat(),
            "old": {"status": old},
            "new": {"status": session.status},
        },
    )
    return session


@transaction.atomic
def table_session_resume(*, session: TableSession, by: User, reason: str = "") -> TableSession:
    """Play resumes (RULES.md §6; art. 70 registers the resumption with its time). A suspension
    the Direzione Giochi ordered is lifted by the Direzione alone (`suspended_by_direzione`,
    403, for a Commissario: management's decision is final). What the table left for the
    resumption (a bank succession decided while play was interrupted) is done in this
    transaction, after this event, by the after-resume hooks (floor/hooks.py)."""
    session = _lock_session(session)
    if session.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": session.pk})
    if session.status != TableSession.Status.INTERRUPTED:
        raise Conflict("session_not_interrupted", "The table session is not interrupted.", details={"session": session.pk})
    interruption = session.interruptions.select_for_update().get(resumed_at__isnull=True)
    if not may_resume(by, interruption.interrupted_as):
        raise NotAllowed(
            "suspended_by_direzione",
            "The Direzione Giochi suspended play at this table: only the Direzione resumes it.",
            details={"session": session.pk, "interruption": interruption.pk},
        )
    resume_reason = clean_text(reason, SessionInterruption, "resume_reason")
    now = timezone.now()
    interruption.resumed_at, interruption.resumed_by, interruption.resume_reason = now, by, resume_reason
    interruption.save(update_fields=["resumed_at", "resumed_by", "resume_reason"])
    old, session.status = session.status, TableSession.Status.OPEN
    session.save(update_fields=["status"])
    record(
        stream=session.audit_stream,
        actor=by,
        action="table_session.resumed",
        subject=session,
        data={
            "interruption": interruption.pk,
            "interrupted_as": interruption.interrupted_as,
            "reason": interruption.resume_reason,
            "at": now.isoformat(),
            "old": {"status": old},
            "new": {"status": session.status},
        },
    )
    run_after_session_resume(session=session, by=by)  # the table's consequences (floor/hooks.py)
    return session


@transaction.atomic
def table_session_close(*, session: TableSession, by: User) -> TableSession:
    """Close a session, open or interrupted. A running interruption ends with it, and every
    patron's place is released: otherwise he could never sit at another table (RULES.md §6)."""
    # Lock order: gaming day, then the session (its table needs no lock: nothing about the
    # table changes, and the session row is what table_session_open checks).
    GamingDay.objects.select_for_update().get(pk=session.gaming_day_id)
    session = _lock_session(session)
    if session.is_closed:
        raise Conflict("session_closed", "The table session is closed already.", details={"session": session.pk})
    now = timezone.now()
    interruption = session.interruptions.select_for_update().filter(resumed_at__isnull=True).first()
    if interruption is not None:
        interruption.resumed_at, interruption.resumed_by = now, by
        interruption.resume_reason = "session closed"
        interruption.save(update_fields=["resumed_at", "resumed_by", "resume_reason"])
    released = list(session.seats.filter(left_at__isnull=True).order_by("pk").values_list("pk", flat=True))
    Seat.objects.filter(pk__in=released).update(left_at=now, left_by=by)
    old, session.status = session.status, TableSession.Status.CLOSED
    session.closed_at, session.closed_by = now, by
    session.save(update_fields=["status", "closed_at", "closed_by"])
    # Other apps' part of the close (tables: refuse while a coup is in play, end the bank),
    # under our locks and in our transaction: a refusal rolls the whole close back (floor/hooks.py).
    run_before_session_close(session=session, by=by)
    record(
        stream=f"gaming_day:{session.gaming_day_id}",
        actor=by,
        action="table_session.closed",
        subject=session,
        data={
            "table": session.table_id,
            "number": session.number,
            "old": {"status": old},
            "new": {"status": session.status, "closed_at": now.isoformat()},
            "interruption_ended": interruption.pk if interruption else None,
            "seats_released": released,
            # The events of the session's own stream at its close: the trail then says the
            # stream must exist (audit.selectors._trail_streams), whatever the rows say.
            "events": AuditStream.objects.filter(name=session.audit_stream).values_list("seq", flat=True).first()
            or 0,
        },
    )
    return session


@transaction.atomic
def table_minimum_change(
    *, session: TableSession, by: User, minimum: int, reason: str, maximum: int | object | None = KEEP
) -> TableSession:
    """RULES.md §6: the Commissario may change the minimum at any time, even during play,
    after telling the players; and with it the house's optional maximum (`maximum`: cents,
    None for no maximum, KEEP to leave it). The history is kept (MinimumChange: both limits
    before and after) and audited. The new limits apply from the next bank, bet or bid; a
    bank already in play is not cut."""
    session = _lock_session(session)
    if session.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": session.pk})
    reason = clean_text(reason, MinimumChange, "reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the minimum changes.")
    new_maximum = session.maximum if maximum is KEEP else maximum
    _check_stakes(minimum=minimum, maximum=new_maximum)
    if minimum == session.minimum and new_maximum == session.maximum:
        raise ApplicationError(
            "minimum_unchanged",
            "The minimum (and the maximum) are these amounts already.",
            details={"minimum": minimum, "maximum": new_maximum},
        )
    now = timezone.now()
    old, old_maximum = session.minimum, session.maximum
    session.minimum, session.maximum = minimum, new_maximum
    session.save(update_fields=["minimum", "maximum"])
    change = MinimumChange.objects.create(
        session=session, by=by, at=now, old=old, new=minimum, old_maximum=old_maximum, new_maximum=new_maximum,
        reason=reason,
    )  # fmt: skip
    record(
        stream=session.audit_stream,
        actor=by,
        action="minimum.changed",
        subject=session,
        data={
            "change": change.pk, "old": old, "new": minimum, "old_maximum": old_maximum,
            "new_maximum": new_maximum, "reason": reason, "at": now.isoformat(),
        },
    )  # fmt: skip
    return session


@transaction.atomic
def table_session_staff_change(
    *,
    session: TableSession,
    by: User,
    reason: str,
    capo_partita: User | None = None,
    changeur: User | None = None,
) -> TableSession:
    """The croupiers' relief: a new Capo Partita, a new changeur, or both, for a session in
    play or interrupted, at any moment (a coup in play goes on with the new one, whose
    tablet takes it where it stands; every step names who recorded it). RULES.md §6: one
    croupier and one changeur per table, so the new Capo Partita may not run another table.
    The outgoing Capo Partita's writes are refused from the commit on: the table's services
    check the actor on the session row they lock, which this change holds locked."""
    # Lock order: gaming day (every session open and staff change takes it, so two tables
    # can't be given one Capo Partita at once), then the session.
    GamingDay.objects.select_for_update().get(pk=session.gaming_day_id)
    session = _lock_session(session)
    if session.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": session.pk})
    reason = clean_text(reason, StaffChange, "reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the staff changes.")
    new_capo = capo_partita if capo_partita is not None else session.capo_partita
    new_changeur = changeur if changeur is not None else session.changeur
    if new_capo.pk == session.capo_partita_id and new_changeur.pk == session.changeur_id:
        raise ApplicationError(
            "staff_unchanged",
            "This Capo Partita and this changeur run the table already.",
            details={"capo_partita": new_capo.pk, "changeur": new_changeur.pk},
        )
    _check_staff(new_capo, new_changeur)
    _check_staff_free(new_capo, new_changeur, but=session)
    now = timezone.now()
    change = StaffChange.objects.create(
        session=session,
        by=by,
        at=now,
        old_capo_partita_id=session.capo_partita_id,
        new_capo_partita=new_capo,
        old_changeur_id=session.changeur_id,
        new_changeur=new_changeur,
        reason=reason,
    )
    old = {"capo_partita": session.capo_partita_id, "changeur": session.changeur_id}
    session.capo_partita, session.changeur = new_capo, new_changeur
    session.save(update_fields=["capo_partita", "changeur"])
    record(
        stream=session.audit_stream,
        actor=by,
        action="table_session.staff_changed",
        subject=session,
        data={
            "change": change.pk,
            "reason": reason,
            "at": now.isoformat(),
            "old": old,
            "new": {"capo_partita": new_capo.pk, "changeur": new_changeur.pk},
        },
    )
    return session


# --------------------------------------------------------------------------- patrons


_DOCUMENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-./")


def normalize_document(number: str | None) -> str:
    """A document number as it is stored and compared: "ab 123 456", "AB123456" and the same in
    fullwidth letters (NFKC) are one document, and so are they with a zero-width space, a
    direction mark or another invisible format character in them (dropped)."""
    text = unicodedata.normalize("NFKC", number or "")
    return "".join(ch for ch in text if not ch.isspace() and unicodedata.category(ch) != "Cf").upper()


def _check_document(number: str) -> None:
    # Latin letters, digits and - . / only, as a document's machine-readable zone writes it:
    # a Cyrillic ES (U+0421) or a Greek ALPHA looks like the Latin letter and would register the same
    # document again as another patron (who could then sit at two tables).
    odd = sorted({ch for ch in number if ch not in _DOCUMENT_CHARS})
    if odd:
        raise ApplicationError(
            "invalid_document_number",
            "A document number is written in Latin letters and digits (and - . /), as in its machine-readable zone.",
            details={"characters": [f"U+{ord(ch):04X}" for ch in odd[:10]]},
        )


@transaction.atomic
def patron_register(
    *,
    by: User,
    first_name: str,
    last_name: str,
    document_type: str,
    document_number: str,
    nationality: str,
    birth_date: dt.date | None = None,
    notes: str = "",
) -> Patron:
    first_name, last_name = clean_text(first_name, Patron, "first_name"), clean_text(last_name, Patron, "last_name")
    document_number = normalize_document(document_number)
    nationality = unicodedata.normalize("NFKC", nationality or "").strip().upper()
    # A name has a letter: one of invisible characters only (a zero-width space) is none.
    if not any(ch.isalpha() for ch in first_name) or not any(ch.isalpha() for ch in last_name):
        raise ApplicationError("name_required", "A patron has a first and a last name.")
    if not document_number:
        raise ApplicationError("document_required", "A patron is registered with an identity document.")
    _check_document(document_number)
    if document_type not in Patron.DocumentType.values:
        raise ApplicationError(
            "unknown_document_type", "Unknown document type.", details={"known": list(Patron.DocumentType.values)}
        )
    if nationality not in iso3166.countries_by_alpha2:  # (fullwidth letters were NFKC-normalized above)
        raise ApplicationError("invalid_nationality", "Nationality is a two-letter ISO country code.")
    if birth_date is not None:
        today = timezone.localdate()
        if birth_date > today:
            raise ApplicationError("invalid_birth_date", "The birth date is in the future.")
        if birth_date < EARLIEST_BIRTH_DATE:
            raise ApplicationError(
                "invalid_birth_date", "The birth date is before 1900.", details={"birth_date": birth_date.isoformat()}
            )
        # Gaming rooms admit adults only (Italian law: 18): a minor's document is refused.
        age = today.year - birth_date.year - ((today.month, today.day) < (birth_date.month, birth_date.day))
        if age < ADULT_AGE:
            raise ApplicationError(
                "patron_under_age",
                f"A patron is at least {ADULT_AGE} years old.",
                details={"birth_date": birth_date.isoformat(), "age": age, "minimum_age": ADULT_AGE},
            )
    existing = Patron.objects.filter(document_type=document_type, document_number=document_number).first()
    if existing is not None:
        raise Conflict(
            "patron_already_registered",
            "A patron with this document is registered.",
            details={"patron": existing.pk},
        )
    try:
        # A savepoint: two desks registering the same document at once meet the unique index.
        with transaction.atomic():
            patron = Patron.objects.create(
                first_name=first_name,
                last_name=last_name,
                document_type=document_type,
                document_number=document_number,
                nationality=nationality,
                birth_date=birth_date,
                notes=notes or "",
                created_at=timezone.now(),
                created_by=by,
            )
    except IntegrityError:
        raise Conflict("patron_already_registered", "A patron with this document is registered.") from None
    record(
        stream="patrons",
        actor=by,
        action="patron.registered",
        subject=patron,
        data={
            "old": None,
            "new": {
                "first_name": first_name,
                "last_name": last_name,
                "document_type": document_type,
                "document_number": document_number,
                "nationality": nationality,
                "birth_date": birth_date.isoformat() if birth_date else None,
            },
        },
    )
    return patron


# --------------------------------------------------------------------------- seats


@transaction.atomic
def seat_assign(
    *,
    session: TableSession,
    patron: Patron,
    by: User,
    seat_number: int | None = None,
    standing: bool = False,
) -> Seat:
    """The Commissario assigns a seat (or registers a standing player) (RULES.md §6).

    The session lock serializes seats at one table; the patron lock serializes one patron
    across tables, so two Commissari seating him at two tables cannot both succeed."""
    session = _lock_session(session)
    patron = Patron.objects.select_for_update().get(pk=patron.pk)
    if session.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": session.pk})
    if standing and seat_number is not None:
        raise ApplicationError("invalid_seat", "A standing player has no seat number.")
    if not standing and seat_number is None:
        raise ApplicationError("seat_number_required", "Give a seat number, or standing: true.")
    seats = session.table.seats
    if not standing and not 1 <= seat_number <= seats:
        raise ApplicationError(
            "seat_out_of_range",
            f"This table's seats are numbered 1 to {seats}.",
            details={"seat_number": seat_number, "seats": seats},
        )
    held = Seat.objects.filter(patron=patron, left_at__isnull=True).select_related("session__table").first()
    if held is not None:
        raise Conflict(
            "patron_already_seated",
            "The patron holds a place already; release it first.",
            details={
                "patron": patron.pk,
                "seat": held.pk,
                "session": held.session_id,
                "table": held.session.table_id,
                "table_number": held.session.table.number,
                "seat_number": held.seat_number,
            },
        )
    if not standing:
        taken = session.seats.filter(seat_number=seat_number, left_at__isnull=True).first()
        if taken is not None:
            raise Conflict(
                "seat_taken",
                "This seat is taken.",
                details={"seat_number": seat_number, "seat": taken.pk, "patron": taken.patron_id},
            )
    seat = Seat.objects.create(
        session=session,
        patron=patron,
        seat_number=None if standing else seat_number,
        standing=standing,
        taken_at=timezone.now(),
        taken_by=by,
    )
    record(
        stream=session.audit_stream,
        actor=by,
        action="seat.taken",
        subject=seat,
        data={
            "patron": patron.pk,
            "old": None,
            "new": {"seat": seat.pk, "seat_number": seat.seat_number, "standing": standing,
                    "taken_at": seat.taken_at.isoformat()},  # the row's time (audit.reports.records holds it)
        },
    )
    return seat


@transaction.atomic
def seat_release(*, seat: Seat, by: User) -> Seat:
    session = TableSession.objects.select_for_update().get(pk=seat.session_id)
    seat = Seat.objects.select_for_update().get(pk=seat.pk)
    if seat.left_at is not None:
        raise Conflict("seat_already_released", "This place was released already.", details={"seat": seat.pk})
    run_before_seat_release(seat=seat, by=by)  # the table's refusals (floor/hooks.py)
    seat.left_at, seat.left_by = timezone.now(), by
    seat.save(update_fields=["left_at", "left_by"])
    record(
        stream=session.audit_stream,
        actor=by,
        action="seat.released",
        subject=seat,
        data={
            "patron": seat.patron_id,
            "old": {"seat_number": seat.seat_number, "standing": seat.standing, "active": True},
            "new": {"active": False, "left_at": seat.left_at.isoformat()},
        },
    )
    run_after_seat_release(seat=seat, by=by)  # the table's consequences (floor/hooks.py)
    return seat
