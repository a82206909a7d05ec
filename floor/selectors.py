"""Reading the floor. Querysets come with their joins and counts prepared, so the API's
list endpoints run a constant number of queries however many rows they return."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    Func,
    IntegerField,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Concat
from django.db.models.lookups import Exact
from django.utils import timezone

from .models import (
    Casino,
    GamingDay,
    MinimumChange,
    Patron,
    Seat,
    SessionInterruption,
    StaffChange,
    Table,
    TableSession,
)


def casino_list() -> QuerySet[Casino]:
    return Casino.objects.prefetch_related("sites").order_by("name")


def table_list() -> QuerySet[Table]:
    return Table.objects.select_related("casino", "site").order_by("casino_id", "number")


def gaming_day_list() -> QuerySet[GamingDay]:
    return GamingDay.objects.select_related("casino", "opened_by", "closed_by").order_by("-date", "-id")


def gaming_day_open_for(*, casino: Casino) -> GamingDay | None:
    return GamingDay.objects.filter(casino=casino, closed_at__isnull=True).first()


def seats_taken_subquery() -> QuerySet[Seat]:
    """The numbered seats taken at the outer query's session (OuterRef("pk")), a count for a
    Subquery: standing players do not count towards starting (RULES.md §6). A subquery per
    session, not a join grouped by session: the grouped join sorted every seat of every
    session before a list could take its first page (a season's sessions list spent 21 ms on
    it at 700 sessions, growing with the years); this reads the seats of the sessions shown.
    The sessions list and the tablet's first-bank wait (tables.selectors) count them so."""
    return (
        Seat.objects.filter(session=OuterRef("pk"), left_at__isnull=True, seat_number__isnull=False)
        .order_by()
        .values("session")
        .annotate(n=Count("pk"))
        .values("n")
    )


def _with_seated_count(qs: QuerySet[TableSession]) -> QuerySet[TableSession]:
    seated = seats_taken_subquery()
    return qs.annotate(seated_count_annotated=Coalesce(Subquery(seated, output_field=IntegerField()), 0))


def table_session_list() -> QuerySet[TableSession]:
    return _with_seated_count(
        TableSession.objects.select_related(
            "table", "table__site", "gaming_day", "capo_partita", "changeur", "opened_by", "closed_by"
        )
    ).order_by("-opened_at", "-id")


def table_session_detail() -> QuerySet[TableSession]:
    return table_session_list().prefetch_related(
        Prefetch(
            "seats",
            queryset=Seat.objects.filter(left_at__isnull=True).select_related("patron", "taken_by", "left_by"),
            to_attr="active_seats",
        ),
        Prefetch(
            "interruptions",
            queryset=SessionInterruption.objects.select_related("interrupted_by", "resumed_by"),
        ),
    )


def session_seated_count(session: TableSession) -> int:
    annotated = getattr(session, "seated_count_annotated", None)
    if annotated is not None:
        return annotated
    return session.seats.filter(left_at__isnull=True, seat_number__isnull=False).count()


def session_can_start(session: TableSession) -> bool:
    """RULES.md §6: a game starts when at least `min_seats_to_start` numbered seats are taken
    (6 of 8 at Venezia). A session must also be open (not interrupted, not closed)."""
    return session.is_open and session_seated_count(session) >= session.table.min_seats_to_start


def seat_list(*, session: TableSession) -> QuerySet[Seat]:
    return (
        Seat.objects.filter(session=session)
        .select_related("patron", "taken_by", "left_by")
        .order_by("standing", "seat_number", "taken_at", "id")
    )


def active_seats_by_session(*, sessions: list[TableSession]) -> dict[int, list[Seat]]:
    """Each session's places still held, in seat_list's order: one query for them all."""
    by_session: dict[int, list[Seat]] = {s.pk: [] for s in sessions}
    rows = (
        Seat.objects.filter(session__in=sessions, left_at__isnull=True)
        .select_related("patron", "taken_by", "left_by")
        .order_by("session_id", "standing", "seat_number", "taken_at", "id")
    )
    for seat in rows if sessions else ():
        by_session[seat.session_id].append(seat)
    return by_session


def gaming_days_open(*, casinos: list[Casino] | None = None) -> dict[int, GamingDay]:
    """The open gaming day of each casino that has one (of `casinos`; None: of every casino),
    by casino id: one query for them all."""
    days = GamingDay.objects.filter(closed_at__isnull=True)
    if casinos is not None:
        days = days.filter(casino__in=casinos)
    return {d.casino_id: d for d in days}


def next_gaming_day_dates(*, casinos: list[Casino]) -> dict[int, dt.date]:
    """The date to offer for each casino's next gaming day, in one query: today, or tomorrow
    once today's day exists (services.gaming_day_open takes a date after the last one, from
    yesterday to tomorrow). Today when both are taken: the service then says why not."""
    today = timezone.localdate()
    days = GamingDay.objects.filter(casino__in=casinos).values("casino").annotate(last=Max("date"))
    last = dict(days.values_list("casino", "last"))
    out = {}
    for casino in casinos:
        latest = last.get(casino.pk)
        options = [d for d in (today, today + dt.timedelta(days=1)) if latest is None or d > latest]
        out[casino.pk] = options[0] if options else today
    return out


def minimum_change_list(*, session: TableSession) -> QuerySet[MinimumChange]:
    return MinimumChange.objects.filter(session=session).select_related("by").order_by("at", "id")


def staff_change_list(*, session: TableSession) -> QuerySet[StaffChange]:
    return (
        StaffChange.objects.filter(session=session)
        .select_related("by", "old_capo_partita", "new_capo_partita", "old_changeur", "new_changeur")
        .order_by("at", "id")
    )


def day_staff_change_rows(*, gaming_day_id: int) -> QuerySet[StaffChange]:
    """A day's staff changes by table, session and time, with their session's table, who made
    each and the people it names loaded (the report's staff changes section writes each person
    as the sessions register does: name and username)."""
    return (
        StaffChange.objects.filter(session__gaming_day_id=gaming_day_id)
        .select_related("session__table", "by", "old_capo_partita", "new_capo_partita", "old_changeur",
                        "new_changeur")
        .order_by("session__table__number", "session__number", "at", "pk")
    )  # fmt: skip


def day_staff_changes(*, gaming_day_id: int) -> QuerySet[StaffChange]:
    """A day's staff changes in order, with the people they name (the sessions register)."""
    return (
        StaffChange.objects.filter(session__gaming_day_id=gaming_day_id)
        .select_related("old_capo_partita", "new_capo_partita", "old_changeur", "new_changeur")
        .order_by("at", "pk")
    )


def staff_in_turn(session: TableSession, changes: Sequence[StaffChange] | None, role: str) -> list[tuple[Any, Any]]:
    """Who held `role` ("capo_partita" or "changeur") at `session`, in turn: (user, since), the
    first from the opening, each relief from its change. `changes`: the session's staff changes
    in order (day_staff_changes), with the people they name. Art. 70 names them all: the
    register's API and its exports (audit.reports) both read them from here."""
    if not changes:
        return [(getattr(session, role), session.opened_at)]
    turn = [(getattr(changes[0], f"old_{role}"), session.opened_at)]
    for change in changes:
        if getattr(change, f"new_{role}_id") != getattr(change, f"old_{role}_id"):
            turn.append((getattr(change, f"new_{role}"), change.at))
    return turn


def patron_list() -> QuerySet[Patron]:
    return Patron.objects.select_related("created_by").order_by("last_name", "first_name", "id")


def patron_search(qs: QuerySet[Patron], text: str, *, documents: bool = True) -> QuerySet[Patron]:
    """Every word must match a first name, a last name or (with `documents`) a document number."""
    for word in text.split():
        match = Q(first_name__icontains=word) | Q(last_name__icontains=word)
        if documents:
            match |= Q(document_number__icontains=word)
        qs = qs.filter(match)
    return qs


# --------------------------------------------------------------------------- end of day
# Read by the end-of-day report (audit/reports): plain rows, streamed where they can grow.


def gaming_day_get(*, pk: int) -> GamingDay:
    return GamingDay.objects.select_related("casino", "opened_by", "closed_by").get(pk=pk)


def gaming_day_or_404(*, pk: int) -> GamingDay:
    """For a view: the day, or Http404."""
    from django.shortcuts import get_object_or_404

    return get_object_or_404(GamingDay, pk=pk)


def gaming_day_locked(*, pk: int) -> GamingDay:
    """The day's row, locked until the caller's transaction ends (the books' writes of a
    closed day serialize on it)."""
    return GamingDay.objects.select_for_update().get(pk=pk)


def last_closed_gaming_day(*, casino) -> GamingDay | None:
    return GamingDay.objects.filter(casino=casino, closed_at__isnull=False).order_by("-date").first()


def table_get(*, pk: int) -> Table | None:
    return Table.objects.filter(pk=pk).first()


def table_session_get(*, pk: int) -> TableSession | None:
    return TableSession.objects.select_related("table", "gaming_day").filter(pk=pk).first()


def patron_get(*, pk: int) -> Patron | None:
    return Patron.objects.filter(pk=pk).first()


def day_patrons(*, gaming_day_id: int) -> QuerySet[Patron]:
    """The patrons who took a place (seated or standing) at a session of the day, by name."""
    return (
        Patron.objects.filter(pk__in=Seat.objects.filter(session__gaming_day_id=gaming_day_id).values("patron_id"))
        .order_by("last_name", "first_name", "id")
    )


def stream_owner_ids() -> tuple[list[int], list[int]]:
    """The ids of every casino and every gaming day: each has its audit stream."""
    return list(Casino.objects.values_list("pk", flat=True)), list(GamingDay.objects.values_list("pk", flat=True))


def gaming_days_due_for_close(*, now, close_hour: int) -> QuerySet[GamingDay]:
    """Open days whose date is past by `close_hour` (local time): the day of the 17th is
    due at close_hour on the 18th. `now` is an aware datetime."""
    local = timezone.localtime(now)
    last_due = local.date() - dt.timedelta(days=1 if local.hour >= close_hour else 2)
    return GamingDay.objects.filter(closed_at__isnull=True, date__lte=last_due).order_by("date", "pk")


def gaming_days_closed_without(*, exclude_ids) -> QuerySet[GamingDay]:
    """Closed days not among `exclude_ids` (the report sweeper passes the days it has)."""
    return GamingDay.objects.filter(closed_at__isnull=False).exclude(pk__in=exclude_ids).order_by("pk")


def day_session_ids(*, gaming_day_id: int) -> list[int]:
    return list(TableSession.objects.filter(gaming_day_id=gaming_day_id).order_by("pk").values_list("pk", flat=True))


def day_sessions(*, gaming_day_id: int) -> QuerySet[TableSession]:
    """The sessions of a day with their table and staff, in register order (table, number)."""
    return (
        TableSession.objects.filter(gaming_day_id=gaming_day_id)
        .select_related("table", "capo_partita", "changeur", "opened_by", "closed_by")
        .order_by("table__number", "number")
    )


def day_tables(*, gaming_day_id: int) -> QuerySet[Table]:
    """The tables that had a session on the day."""
    return Table.objects.filter(sessions__gaming_day_id=gaming_day_id).distinct().order_by("number")


# str.strip()'s whitespace, every character Python strips (tests/audit/test_report_staff.py
# checks it), so that _Strip strips a full name as User.get_full_name() does.
STRIPPED = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class _Strip(Func):
    """The text stripped of STRIPPED's characters at both ends: PostgreSQL's BTRIM(text,
    characters); SQLite (the zero-configuration demo) has no BTRIM, its TRIM(text, characters)
    does the same."""

    function = "BTRIM"
    output_field = CharField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, function="TRIM", **extra_context)


def staff_said(prefix: str) -> Case:
    """A member of staff as the end-of-day report names him, in one SQL expression over the
    row's own join: "Full Name (username)", the username alone when he has no name (as the
    report's `_who` over a loaded user: get_full_name's rule, first and last joined by a
    space, stripped), NULL when there is nobody (`prefix`: the user's relation, "by",
    "resumed_by"). No user is looked up per row: the report's sections keep their queries."""
    full = _Strip(Concat(F(f"{prefix}__first_name"), Value(" "), F(f"{prefix}__last_name")), Value(STRIPPED))
    username = F(f"{prefix}__username")
    return Case(
        When(**{f"{prefix}__isnull": True}, then=Value(None, output_field=CharField())),
        When(Exact(full, Value("")), then=username),
        default=Concat(full, Value(" ("), username, Value(")")),
        output_field=CharField(),
    )


def day_interruption_rows(*, gaming_day_id: int, named: bool = False):
    """(table, session, interrupted_at, by, as, reason, resumed_at, by, reason) per interruption:
    `as` the capacity it was ordered in (commissario | direzione: a Direzione's is lifted by
    the Direzione alone). Who interrupted and resumed: usernames (the cagnotte register's API),
    or with `named` as the end-of-day report names staff (staff_said)."""
    rows = SessionInterruption.objects.filter(session__gaming_day_id=gaming_day_id)
    who = ("interrupted_by__username", "resumed_by__username")
    if named:
        rows, who = rows.annotate(interrupted_said=staff_said("interrupted_by"),
                                  resumed_said=staff_said("resumed_by")), ("interrupted_said", "resumed_said")  # fmt: skip
    return (
        rows.order_by("session__table__number", "session__number", "interrupted_at", "pk")
        .values_list(
            "session__table__number",
            "session__number",
            "interrupted_at",
            who[0],
            "interrupted_as",
            "reason",
            "resumed_at",
            who[1],
            "resume_reason",
        )
    )


@dataclass(frozen=True)
class InForce:
    """A table limit and the moment from which it was in force."""

    amount: int | None  # cents; None: no maximum
    since: dt.datetime


@dataclass(frozen=True)
class SessionLimits:
    """The limits of a session in the order they were in force (RULES.md §6: the Commissario
    may change the minimum at any time, even during play, and the maximum with it): the
    first at the opening, then one per change of that limit."""

    minimums: tuple[InForce, ...]
    maximums: tuple[InForce, ...]

    @property
    def had_maximum(self) -> bool:
        return any(m.amount is not None for m in self.maximums)


def limits_in_force(session: TableSession, changes: Iterable[MinimumChange]) -> SessionLimits:
    """The session's limits from its opening through its changes (in the order they were
    made). The session's row holds only the limits in force now; the opening's are the
    first change's `old` figures (none changed: the row's). A change of the maximum alone
    adds no minimum, and the other way round."""
    changes = list(changes)
    first = changes[0] if changes else None
    minimums = [InForce(session.minimum if first is None else first.old, session.opened_at)]
    maximums = [InForce(session.maximum if first is None else first.old_maximum, session.opened_at)]
    for change in changes:
        if change.new != minimums[-1].amount:
            minimums.append(InForce(change.new, change.at))
        if change.new_maximum != maximums[-1].amount:
            maximums.append(InForce(change.new_maximum, change.at))
    return SessionLimits(tuple(minimums), tuple(maximums))


def day_session_limits(*, gaming_day_id: int, sessions: Iterable[TableSession]) -> dict[int, SessionLimits]:
    """Each of `sessions` (of the day) with its limits in force, by session id: one query for
    every change of the day, however many sessions and changes."""
    changes: dict[int, list[MinimumChange]] = {}
    for change in MinimumChange.objects.filter(session__gaming_day_id=gaming_day_id).order_by("session_id", "at", "pk"):
        changes.setdefault(change.session_id, []).append(change)
    return {s.pk: limits_in_force(s, changes.get(s.pk, ())) for s in sessions}


def day_minimum_change_rows(*, gaming_day_id: int):
    """(table, session, at, by, old, new, old maximum, new maximum, reason) per change of limits;
    who made it as the end-of-day report names staff (staff_said), its only reader."""
    return (
        MinimumChange.objects.filter(session__gaming_day_id=gaming_day_id)
        .annotate(by_said=staff_said("by"))
        .order_by("session__table__number", "session__number", "at", "pk")
        .values_list(
            "session__table__number", "session__number", "at", "by_said", "old", "new", "old_maximum",
            "new_maximum", "reason",
        )
    )  # fmt: skip
