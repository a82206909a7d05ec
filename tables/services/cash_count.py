"""The count of a table session's cash drawer, once the session is closed: the changeur's
register (tables.services.cash) says what cash the table took; the drawer is counted against
it, as a casino counts each table's drawer at the end of its session, before the supervisor,
and records the difference (a missing or an extra banknote is on record, never absorbed).

Who: the Commissario di Gioco or the Direzione Giochi (COUNTS_DRAWER). Not the changeur,
whose drawer it is, nor the Capo Partita (segregation of duties, floor.roles), nor the
auditor, who writes nothing.

When: once the session is closed (its register takes no more lines, so the net it is held to
is final; `session_not_closed` before), while its gaming day is open and after its close too,
until the day's books are final: refused once the day's control register in force carries
both signatures (`books_signed`, as an unclaimed deposit, audit.reports.unclaimed). A drawer
not counted before the close (the automatic one at GAMING_DAY_CLOSE_HOUR included) is then
counted late, and the report version that signature asks for lists it. After that signature
no count nor correction: unlike a cagnotte count, a drawer is not among the register's
figures, so a count then would leave the register as it stands (no correction of it, hence
no later version) and stand in no report. A correction of the register, awaiting its own two
signatures, opens the books again: the version its signature asks for holds what was counted
meanwhile.

Where its events go: while the day is open, to the session's stream; once the day is closed,
to the day's books stream (audit.services.books_stream, as the cagnotte's counts and the
control register), never to the session's: the day's first report, built at the close, seals
the session's stream, and a later event there would stand outside the report that lists the
session. The verification reads a count's event in either stream (audit.reports.cash).

What: `float_issued` (the float slip's cash, 0 if none) and `counted`, cents, >= 0, at most
the register's maximum (MAX_EXCHANGE_CENTS); the service computes `net` (the register's,
voided lines left out, exactly as the totals) and `expected` = float_issued + net, and the
difference is counted - expected.

The chips mirror the cash: every chip the changeur sold was paid in cash and every chip he
bought back was paid out, so the chips his tray should hold are those it started with less the
same net. Optionally, then, `chips_float` (the chips' value on the float slip) and
`chips_counted` (the chips' value found in the tray), cents, bounded as the cash figures: both
or neither (`chips_incomplete`, naming the one missing); the service stores `chips_expected` =
chips_float - net, and the chips' difference is chips_counted - chips_expected. A chips float
below what the register says was handed out (chips_expected < 0) is not refused: the float slip
and the register are what they are, and a count refused would leave the tray on no record or
push the counter to type a float other than the slip's; the count records both, and the
difference (a surplus as large as the gap) puts the disagreement on record for the supervisor.

The changeur's handover: a changeur relieved while the session runs (floor.models.StaffChange,
old_changeur != new_changeur) hands his drawer over counted, so that a shortfall is his or his
successor's, not the session's. A handover count is a count like the final one, with
`staff_change` set: the same figures, the same counters, the same corrections, its event the
same (its payload names the staff change). It is taken from the staff change on, the session
still running or closed, while the day is open and after its close until the books are signed,
as the final count (`books_signed`); the final count's rules are unchanged (the session closed).
A staff change of another session, or none: `unknown_staff_change`; one that kept the changeur
(only the Capo Partita relieved): `changeur_not_changed` (both 400: there is no handover to count).
Its `net` is the register's as the final count's, of the lines recorded up to the handover
(`CashExchange.at <= staff_change.at`), voided lines left out as they stand when counted. The
time, not the line number: the staff change stores no line number (floor does not read the
register), and both times are taken under the session's row lock (an exchange through
tables.services._common.lock_session, the staff change through floor.services._lock_session),
which serializes them: every line recorded before the handover committed has an earlier time,
every line after it a later one, and the outgoing changeur records none after it (his writes
are refused from the change's commit on). The line's and the change's events carry those times,
so the cutoff is checkable from the trail alone. Each count holds the whole drawer since the
float slip: the part of a difference that arose after a handover is derived (the later
difference less the handover's, tables.selectors.cash_count_since_handover), never stored.

One original final count per session, one original count per handover (`already_counted`); a
mistake is corrected by a new count that refers to the one in force, with its reason (the
corrected one stays, `already_corrected` for it), as the cagnotte's counts (audit.reports.
registers). Each count and correction writes its event in the same transaction
(`cash.drawer_counted`, `cash.drawer_count_corrected`), with every figure, the same whichever
stream it goes to (the chips' figures only when the chips were counted:
tables.report_selectors.cash_count_payload)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from audit.services import books_signed_register, books_stream
from config.errors import ApplicationError, Conflict, NotAllowed, clean_text, integrity_constraint
from config.transactions import service_atomic
from floor.models import GamingDay, StaffChange, TableSession
from floor.roles import Role, has_role

from ..models import MAX_EXCHANGE_CENTS, CashCount
from ..report_selectors import cash_count_payload as count_payload
from ._common import User, now, record

# Who counts a closed session's drawer, and corrects its count.
COUNTS_DRAWER = (Role.COMMISSARIO, Role.DIREZIONE)
COUNTED, CORRECTED = "cash.drawer_counted", "cash.drawer_count_corrected"
FIGURES = ("float_issued", "counted", "chips_float", "chips_counted")
CHIPS = ("chips_float", "chips_counted")
# The partial unique indexes that hold one original count per drawer (tables.models.CashCount).
ONE_ORIGINAL = ("tables_cash_count_one_per_session", "tables_cash_count_one_per_handover")


def _check_counter(by: User) -> None:
    # The API refuses first (tables.api.cash); the service holds the rule for any caller.
    if not has_role(by, *COUNTS_DRAWER):
        raise NotAllowed(
            "permission_denied",
            "Only the Commissario di Gioco or the Direzione Giochi counts a table's drawer.",
        )


def _check_figure(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ApplicationError(
            "bad_figure", "A drawer's figure is a whole number of cents, >= 0.", details={"field": field}
        )
    if value > MAX_EXCHANGE_CENTS:
        raise ApplicationError(
            "figure_above_maximum",
            "A drawer's figure is at most the register's maximum.",
            details={"field": field, "maximum": MAX_EXCHANGE_CENTS},
        )


def _check_chips(chips_float: int | None, chips_counted: int | None) -> None:
    """The chips are counted whole: the tray's float and what was found in it, or neither (a
    float alone has nothing to be held to; a count alone, nothing to be held against)."""
    given = {"chips_float": chips_float, "chips_counted": chips_counted}
    missing = [field for field, value in given.items() if value is None]
    if len(missing) == 1:
        raise ApplicationError(
            "chips_incomplete",
            "The chips are counted with both figures: the chips' float and the chips counted, or neither.",
            details={"field": missing[0]},
        )
    for field, value in given.items():
        if value is not None:
            _check_figure(field, value)


def _chips_expected(chips_float: int | None, net: int) -> int | None:
    # The chips handed out are the cash taken (net): what the tray should hold is its float less
    # them. Below 0 is kept (see the module's docstring): the difference shows it.
    return None if chips_float is None else chips_float - net


def _lock_closed_session(session_id: int, *, handover: bool = False) -> tuple[TableSession, str]:
    """The session, locked, and the stream its count's event goes to. The lock order
    (ARCHITECTURE.md): the gaming day, then the session. The day's lock also orders a count
    after the close with the control register's signatures and corrections (they take it), so
    the register read here stays the one in force until the count commits. handover: a
    handover count, taken while the session runs too (its staff change is in the past)."""
    day_id = TableSession.objects.values_list("gaming_day_id", flat=True).get(pk=session_id)
    day = GamingDay.objects.select_for_update().get(pk=day_id)
    session = TableSession.objects.select_for_update(of=("self",)).get(pk=session_id)
    if not handover and not session.is_closed:
        raise Conflict(
            "session_not_closed",
            "The session is still in play: its drawer is counted once it is closed.",
            details={"session": session.pk, "status": session.status},
        )
    if day.is_open:
        return session, session.audit_stream
    register = books_signed_register(gaming_day_id=day.pk)
    if register is not None:
        raise Conflict(
            "books_signed",
            "The day's control register is signed: its books are final, and its report holds the session's "
            "drawer as it stood.",
            details={"gaming_day": day.pk, "session": session.pk, "register": register},
        )
    # A late count: the day's report sealed the session's stream at the close.
    return session, books_stream(day.pk)


def _net(session: TableSession, change: StaffChange | None = None) -> int:
    """The register's net for a count: the whole session's, or, for a handover count, of the
    lines recorded up to the handover (see the module's docstring: the time, not the line)."""
    from ..selectors import cash_exchange_totals

    return cash_exchange_totals(session=session, until=None if change is None else change.at)["net"]


def _handover(session: TableSession, staff_change: StaffChange | int) -> StaffChange:
    """The staff change whose handover is counted: this session's, and one that relieved its
    changeur (a change of the Capo Partita alone hands no drawer over)."""
    pk = staff_change.pk if isinstance(staff_change, StaffChange) else staff_change
    change = None
    if isinstance(pk, int) and not isinstance(pk, bool):
        change = StaffChange.objects.filter(pk=pk, session_id=session.pk).first()
    if change is None:
        raise ApplicationError(
            "unknown_staff_change",
            "No such staff change at this session.",
            details={"staff_change": pk if isinstance(pk, int) else None, "session": session.pk},
        )
    if change.old_changeur_id == change.new_changeur_id:
        raise ApplicationError(
            "changeur_not_changed",
            "This staff change kept the changeur: no drawer was handed over.",
            details={"staff_change": change.pk, "session": session.pk, "changeur": change.new_changeur_id},
        )
    return change


@service_atomic
def cash_count_record(
    *, session: TableSession | int, by: User, float_issued: int, counted: int, note: str = "",
    chips_float: int | None = None, chips_counted: int | None = None, staff_change: StaffChange | int | None = None,
) -> CashCount:  # fmt: skip
    """Count the drawer of a closed session, or (`staff_change`) the drawer a relieved changeur
    handed over: the float it started with, the cash found, and optionally the chips (their
    float and what the tray held, both or neither). The expected cash and chips and the
    differences are computed here, from the register (up to the handover for a handover)."""
    _check_counter(by)
    for field, value in (("float_issued", float_issued), ("counted", counted)):
        _check_figure(field, value)
    _check_chips(chips_float, chips_counted)
    note = clean_text(note, CashCount, "note")
    session, stream = _lock_closed_session(
        session if isinstance(session, int) else session.pk, handover=staff_change is not None
    )
    change = None if staff_change is None else _handover(session, staff_change)
    existing = (
        CashCount.objects.filter(session=session, staff_change=change, corrects__isnull=True)
        .values_list("pk", flat=True)
        .first()
    )
    if existing is not None:
        raise Conflict(
            "already_counted",
            "This session's drawer is counted already; enter a correction of the count in force."
            if change is None else
            "The drawer of this handover is counted already; enter a correction of the count in force.",
            details={"count": existing, "in_force": cash_count_in_force_id(session.pk, staff_change=change),
                     **({} if change is None else {"staff_change": change.pk})},
        )  # fmt: skip
    net = _net(session, change)
    try:
        with transaction.atomic():  # the partial unique indexes are the backstop of a race
            count = CashCount.objects.create(
                session=session, staff_change=change, float_issued=float_issued, net=net,
                expected=float_issued + net, counted=counted,
                chips_float=chips_float, chips_expected=_chips_expected(chips_float, net), chips_counted=chips_counted,
                counted_by=by, counted_at=now(), note=note,
            )  # fmt: skip
    except IntegrityError as exc:
        # Only the unique indexes are a count raced in meanwhile (SQLite names no constraint);
        # another refusal (tables migration 0018: a net that is not the register's) is not
        # `already_counted`: it goes up as the database said it (config.errors names it).
        if integrity_constraint(exc) not in (None, *ONE_ORIGINAL):
            raise
        raise Conflict("already_counted", "This drawer is counted already.") from None
    record(stream=stream, actor=by, action=COUNTED, subject=count, data={"old": None, "new": count_payload(count)})
    return count


@service_atomic
def cash_count_correct(
    *, count: CashCount, by: User, reason: str, float_issued: int | None = None, counted: int | None = None,
    chips_float: int | None = None, chips_counted: int | None = None,
) -> CashCount:  # fmt: skip
    """A correction is a new count that refers to the one it corrects, with its reason;
    nothing is edited. A figure not given (None) is the corrected count's, restated; none
    given, or all as they stand: `nothing_to_correct`. Chips once counted stay counted (a chips
    figure not given is restated, never dropped); a correction of a count without chips may add
    them, both figures then (`chips_incomplete`)."""
    _check_counter(by)
    given = {"float_issued": float_issued, "counted": counted, "chips_float": chips_float,
             "chips_counted": chips_counted}  # fmt: skip
    if all(value is None for value in given.values()):
        raise ApplicationError(
            "nothing_to_correct", "Give the float issued, the cash counted, the chips' float or the chips counted."
        )
    for field, value in given.items():
        if value is not None:
            _check_figure(field, value)
    reason = clean_text(reason, CashCount, "note")
    if not reason:
        raise ApplicationError("reason_required", "Say why the count is corrected.")
    handover = CashCount.objects.filter(pk=count.pk).values_list("staff_change_id", flat=True).get() is not None
    session, stream = _lock_closed_session(count.session_id, handover=handover)
    old = CashCount.objects.select_for_update(of=("self",)).select_related("staff_change").get(pk=count.pk)
    newer = CashCount.objects.filter(corrects=old).values_list("pk", flat=True).first()
    if newer is not None:
        raise Conflict(
            "already_corrected",
            "This count was corrected already; correct the count in force.",
            details={"count": old.pk, "correction": newer,
                     "in_force": cash_count_in_force_id(session.pk, staff_change=old.staff_change_id)},
        )  # fmt: skip
    figures = {field: getattr(old, field) if value is None else value for field, value in given.items()}
    # A count without chips takes them here whole; one with chips restates the figure not given.
    _check_chips(figures["chips_float"], figures["chips_counted"])
    if all(figures[field] == getattr(old, field) for field in FIGURES):
        raise ApplicationError(
            "nothing_to_correct",
            "The figures given are the count's own: nothing to correct.",
            details={"count": old.pk, **figures},
        )
    net = _net(session, old.staff_change)  # a handover's: the same cutoff
    new = CashCount.objects.create(
        session=session, staff_change=old.staff_change, float_issued=figures["float_issued"], net=net, expected=figures["float_issued"] + net,
        counted=figures["counted"], chips_float=figures["chips_float"],
        chips_expected=_chips_expected(figures["chips_float"], net), chips_counted=figures["chips_counted"],
        counted_by=by, counted_at=now(), note=reason, corrects=old,
    )  # fmt: skip
    record(stream=stream, actor=by, action=CORRECTED, subject=new,
           data={"old": count_payload(old), "new": count_payload(new), "reason": reason})  # fmt: skip
    return new


def cash_count_in_force_id(session_id: int, *, staff_change: StaffChange | int | None = None) -> int | None:
    """The count no other corrects (one per counted drawer: a chain of corrections): the
    session's final count's, or that of the handover of `staff_change`."""
    return (
        CashCount.objects.filter(session_id=session_id, staff_change=staff_change, corrected_by__isnull=True)
        .values_list("pk", flat=True)
        .first()
    )
