"""The cagnotte register and count of each table (RULES.md §8, arts. 70-71) and the control
register of the day with its two sign-offs (art. 72).

Writes follow the house style: one transaction per use case, the gaming day locked first,
the audit event inside. The events go to the stream "day_books:<day id>", not to the day's
own stream: the day's seal (taken when its report is built) must stay verifiable while the
books are counted and signed after the close."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.models import AuditEvent, CagnotteCount, ControlRegister, DayReport, UnclaimedDeposit
from audit.services import books_stream, record
from config.errors import ApplicationError, Conflict, NotAllowed, clean_text
from floor import selectors as floor_selectors
from floor.roles import ALL_ROLES, Role, has_role
from tables import report_selectors

from .words import euros_en, euros_it

# Who may witness a cagnotte count: not the table staff whose box it is (_check_witness).
WITNESS_ROLES = (Role.COMMISSARIO, Role.DIREZIONE, Role.AUDITOR)
# The tips counted, cents: bounded as the API bounds the counted cagnotte (10^12 cents, ten
# billion euro), so an absurd figure from any caller is a 400, never a database overflow.
MAX_TIPS_CENTS = 10**12

if TYPE_CHECKING:
    from floor.models import GamingDay, Table

User = AbstractBaseUser
logger = logging.getLogger(__name__)


def _require_direzione(user: User, what: str) -> None:
    # The API refuses first (DirezioneWrites); the service holds the rule for any caller.
    if not has_role(user, Role.DIREZIONE):
        raise NotAllowed("permission_denied", f"Only the Direzione Giochi may {what}.")


def _lock_closed_day(gaming_day: GamingDay) -> GamingDay:
    day = floor_selectors.gaming_day_locked(pk=gaming_day.pk)
    if day.is_open:
        raise Conflict(
            "day_not_closed", "The gaming day is still open; close it first.", details={"gaming_day": day.pk}
        )
    return day


def _check_witness(by: User, witness: User) -> None:
    if witness.pk == by.pk:
        raise ApplicationError(
            "witness_must_differ", "The witness of a count must be another person than the counter."
        )
    if not has_role(witness, *ALL_ROLES):
        raise ApplicationError("witness_not_staff", "The witness must be a member of staff.",
                               details={"witness": witness.pk})  # fmt: skip
    if not has_role(witness, *WITNESS_ROLES):
        # The box holds the levies the table's croupier and changeur put in it: they do not
        # vouch for its count. RULES.md §8 (art. 70) has it counted before the director;
        # the witness is of the floor's management or its auditors.
        raise ApplicationError(
            "witness_not_management",
            "The witness must be a Commissario, a member of the Direzione or an auditor, not table staff.",
            details={"witness": witness.pk},
        )


def _check_tips(tips: Any) -> None:
    # None: the tips box was not counted with this count (said so, never read as a zero).
    if tips is not None and (isinstance(tips, bool) or not isinstance(tips, int) or not 0 <= tips <= MAX_TIPS_CENTS):
        raise ApplicationError("invalid_tips", "The tips counted are a whole number of cents, >= 0 (at most 10^12).",
                               details={"field": "tips"})  # fmt: skip


def count_payload(count: CagnotteCount) -> dict[str, Any]:
    """What a count's event records of it (the end-of-day report keeps it of each count it lists)."""
    return _count_payload(count)


def _count_payload(count: CagnotteCount) -> dict[str, Any]:
    return {
        "count": count.pk,
        "table": count.table_id,
        "expected": count.expected,
        "counted": count.counted,
        # The tips box, counted with the cagnotte's (RULES.md §6): the staff's, in no house
        # figure; null: not counted. Events written before it was recorded do not say it.
        "tips": count.tips,
        "surplus": count.surplus,
        "shortfall": count.shortfall,
        "carried": count.carried,
        "counted_by": count.counted_by_id,
        "witness": count.witness_id,
        "corrects": count.corrects_id,
        "note": count.note,
        "counted_at": count.counted_at.isoformat(),  # the row's time (the event has its own)
    }


# --------------------------------------------------------------------------- counts


def current_counts(*, gaming_day_id: int):
    """The count in force per table: the last of each chain of corrections."""
    return (
        CagnotteCount.objects.filter(gaming_day_id=gaming_day_id, corrected_by__isnull=True)
        .select_related("table", "counted_by", "witness")
        .order_by("table__number")
    )


def day_counts(*, gaming_day_id: int):
    """Every cagnotte count of the day, the corrected ones with their corrections."""
    return (
        CagnotteCount.objects.filter(gaming_day_id=gaming_day_id)
        .select_related("table", "counted_by", "witness")
        .order_by("table__number", "counted_at", "pk")
    )


@transaction.atomic
def cagnotte_count_record(
    *, gaming_day: GamingDay, table: Table, by: User, witness: User, counted: int, note: str = "",
    tips: int | None = None,
) -> CagnotteCount:
    """Enter the counted cagnotte of a table for a closed day (art. 70), with a witness.

    The expected cagnotte is computed here, from the house postings, so it is the figure of
    record whatever a screen showed. Surplus: an extra levy; shortfall: borne by the casino;
    each table on its own (differences never offset); the higher figure is carried.

    `tips`: the table's tips box (the mance, RULES.md §6), opened and counted at the same
    time before the same people; the staff's, never in a house figure. None: not counted."""
    _require_direzione(by, "count the cagnotte")
    _check_witness(by, witness)
    if isinstance(counted, bool) or not isinstance(counted, int) or counted < 0:
        raise ApplicationError("invalid_amount", "The counted cagnotte is a whole number of cents, >= 0.")
    _check_tips(tips)
    day = _lock_closed_day(gaming_day)
    if table.casino_id != day.casino_id or not day.sessions.filter(table=table).exists():
        raise ApplicationError(
            "table_not_played", "The table had no session on this gaming day.",
            details={"table": table.pk, "gaming_day": day.pk},
        )  # fmt: skip
    existing = CagnotteCount.objects.filter(gaming_day=day, table=table, corrects__isnull=True).first()
    if existing is not None:
        raise Conflict(
            "already_counted",
            "This table's cagnotte is counted already; enter a correction that refers to it.",
            details={"count": existing.pk},
        )
    try:
        with transaction.atomic():  # the partial unique index is the backstop of a race
            count = CagnotteCount.objects.create(
                gaming_day=day,
                table=table,
                expected=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk),
                counted=counted,
                tips=tips,
                counted_by=by,
                witness=witness,
                counted_at=timezone.now(),
                note=clean_text(note, CagnotteCount, "note"),
            )
    except IntegrityError:
        raise Conflict("already_counted", "This table's cagnotte is counted already.") from None
    record(stream=books_stream(day.pk), actor=by, action="cagnotte.counted", subject=count,
           data={"old": None, "new": _count_payload(count)})  # fmt: skip
    return count


@transaction.atomic
def cagnotte_count_correct(
    *, count: CagnotteCount, by: User, witness: User, counted: int | None = None, note: str,
    tips: int | None = None,
) -> CagnotteCount:
    """A correction is a new count that refers to the one it corrects; nothing is edited.

    It corrects the counted cagnotte, the tips, or both: a figure not given (None) is the
    corrected count's, restated in the new row. Tips once counted stay counted (a correction
    gives another figure, 0 included, never "not counted"). Neither given: `nothing_to_correct`."""
    _require_direzione(by, "correct a count")
    _check_witness(by, witness)
    if counted is None and tips is None:
        raise ApplicationError("nothing_to_correct", "Give the counted cagnotte, the tips, or both.")
    if counted is not None and (isinstance(counted, bool) or not isinstance(counted, int) or counted < 0):
        raise ApplicationError("invalid_amount", "The counted cagnotte is a whole number of cents, >= 0.")
    _check_tips(tips)
    note = clean_text(note, CagnotteCount, "note")
    if not note:
        raise ApplicationError("reason_required", "Say why the count is corrected.")
    day = _lock_closed_day(count.gaming_day)
    old = CagnotteCount.objects.select_for_update().get(pk=count.pk)
    if CagnotteCount.objects.filter(corrects=old).exists():
        raise Conflict("already_corrected", "This count was corrected already; correct the latest one.",
                       details={"count": old.pk, "correction": old.corrected_by.pk})  # fmt: skip
    new = CagnotteCount.objects.create(
        gaming_day=day,
        table_id=old.table_id,
        expected=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=old.table_id),
        counted=old.counted if counted is None else counted,
        tips=old.tips if tips is None else tips,
        counted_by=by,
        witness=witness,
        counted_at=timezone.now(),
        note=note,
        corrects=old,
    )
    record(stream=books_stream(day.pk), actor=by, action="cagnotte.count_corrected", subject=new,
           data={"old": _count_payload(old), "new": _count_payload(new)})  # fmt: skip
    return new


# --------------------------------------------------------------------------- cagnotte register


def _user(u) -> dict[str, Any] | None:
    return None if u is None else {"id": u.pk, "username": u.get_username(), "name": u.get_full_name()}


def cagnotte_register(*, gaming_day_id: int, table_id: int | None = None) -> list[dict[str, Any]]:
    """Per table (art. 70): each session with its opening and closing times, the croupier
    and the changeur, every interruption and resumption, the shoes used; each banker's
    coups described separately (art. 71) with the levy of every coup; the expected
    cagnotte (sum of the levies posted to the house) and the count, if entered."""
    sessions = floor_selectors.day_sessions(gaming_day_id=gaming_day_id)
    if table_id is not None:
        sessions = sessions.filter(table_id=table_id)
    figures = report_selectors.table_figures(gaming_day_id=gaming_day_id)
    session_figures = report_selectors.session_figures(gaming_day_id=gaming_day_id)
    counts = {c.table_id: c for c in current_counts(gaming_day_id=gaming_day_id)}
    interruptions: dict[tuple, list] = {}
    for t, s, at, by, as_, reason, resumed_at, resumed_by, resume_reason in floor_selectors.day_interruption_rows(
        gaming_day_id=gaming_day_id
    ):
        interruptions.setdefault((t, s), []).append({
            "interrupted_at": at, "by": by, "interrupted_as": as_, "reason": reason,
            "resumed_at": resumed_at, "resumed_by": resumed_by, "resume_reason": resume_reason,
        })  # fmt: skip
    shoes: dict[tuple, list] = {}
    for row in report_selectors.shoe_rows(gaming_day_id=gaming_day_id, table_id=table_id):
        shoes.setdefault(row[:2], []).append(dict(zip(report_selectors.SHOE_COLUMNS[2:], row[2:], strict=True)))
    coups: dict[tuple, list] = {}
    for row in report_selectors.coup_rows(gaming_day_id=gaming_day_id, table_id=table_id):
        c = dict(zip(report_selectors.COUP_COLUMNS, row, strict=True))
        if c["state"] != "settled":
            continue  # a coup annulled (or still in play) was not played: not among the bank's coups
        coups.setdefault((c["table"], c["session"], c["bank"]), []).append(
            {k: c[k] for k in ("coup", "settled_at", "covered", "winner", "levy", "paid_to_winner", "conforming")}
        )
    banks: dict[tuple, list] = {}
    for row in report_selectors.bank_rows(gaming_day_id=gaming_day_id, table_id=table_id):
        b = dict(zip(report_selectors.BANK_COLUMNS, row, strict=True))
        b["coups_detail"] = coups.get((b["table"], b["session"], b["bank"]), [])
        banks.setdefault((b["table"], b["session"]), []).append(b)

    sessions = list(sessions)
    limits = floor_selectors.day_session_limits(gaming_day_id=gaming_day_id, sessions=sessions)
    # Art. 70 names every croupier and changeur of a session, in turn, as the exports do.
    reliefs: dict[int, list] = {}
    for change in floor_selectors.day_staff_changes(gaming_day_id=gaming_day_id):
        reliefs.setdefault(change.session_id, []).append(change)

    def in_turn(session, role: str) -> list[dict[str, Any]]:
        turn = floor_selectors.staff_in_turn(session, reliefs.get(session.pk), role)
        return [{**_user(user), "from": since} for user, since in turn]

    def in_force(history) -> list[dict[str, Any]]:
        return [{"amount": item.amount, "from": item.since} for item in history]

    out: dict[int, dict[str, Any]] = {}
    for s in sessions:
        table = s.table
        entry = out.get(table.pk)
        if entry is None:
            count = counts.get(table.pk)
            entry = out[table.pk] = {
                "table": {"id": table.pk, "number": table.number, "profile": table.profile},
                "sessions": [],
                "expected_cagnotte": figures.get(table.pk, {}).get("expected_cagnotte", 0),
                "count": None if count is None else {**_count_payload(count), "counted_at": count.counted_at},
            }
        key = (table.number, s.number)
        entry["sessions"].append({
            "id": s.pk, "number": s.number, "opened_at": s.opened_at, "closed_at": s.closed_at,
            # Who is in place at the close (or now); `croupiers` and `changeurs`: all of them, in turn.
            "capo_partita": _user(s.capo_partita), "changeur": _user(s.changeur), "shoe_number": s.shoe_number,
            "croupiers": in_turn(s, "capo_partita"), "changeurs": in_turn(s, "changeur"),
            # Every minimum (and maximum) in force, from the opening, in order (RULES.md §6).
            "minimums": in_force(limits[s.pk].minimums), "maximums": in_force(limits[s.pk].maximums),
            "interruptions": interruptions.get(key, []), "shoes": shoes.get(key, []), "banks": banks.get(key, []),
            "expected_cagnotte": session_figures.get(s.pk, {}).get("expected_cagnotte", 0),
        })  # fmt: skip
    return list(out.values())


# --------------------------------------------------------------------------- control register


def _refuse_counts_not_as_recorded(day: GamingDay) -> None:
    """Nobody writes or signs a register over a count that is not what its event recorded:
    a count edited in SQL (or written with no event) reads as a legitimate figure, even as a
    later correction, and would go into the register and its signatures. Verification names
    it only afterwards (`count_not_as_recorded`); this refuses it before (409, writes
    nothing). So for an unclaimed deposit the register's lines carry (`deposit_not_as_recorded`).
    The day's books stream is replayed once (books_verify)."""
    found = books_verify(gaming_day_id=day.pk)
    problems = [p for p in found if p["code"] in ("count_not_as_recorded", "count_missing")]
    deposits = [p for p in found if p["code"] in ("deposit_not_as_recorded", "deposit_missing")]
    if deposits and not problems:  # an unclaimed deposit the register would carry: the same rule
        raise Conflict(
            "deposit_not_as_recorded",
            "An unclaimed deposit of the day is not what the audit trail recorded for it.",
            details={"deposits": [p["deposit"] for p in deposits]},
        )
    if not problems:
        return
    raise Conflict(
        "count_not_as_recorded",
        "A cagnotte count of the day is not what the audit trail recorded for it.",
        details={
            "counts": [p["count"] for p in problems],
            "tables": sorted({p["table_number"] for p in problems if "table_number" in p}),
        },
    )


def _refuse_registers_not_as_recorded(day: GamingDay) -> None:
    """Nobody signs, brings up to date or corrects a register while a register of the day is
    not what its events recorded: a row edited in SQL (its figures, words, preparer, a
    signer or a signature's time; a first signature slipped in, which the second would then
    complete) or written with no event, or one the trail recorded and that is gone (the
    register in force deleted, an older one read as in force). Verification names it only
    afterwards (`register_not_as_recorded`); this refuses it before (409, writes nothing),
    naming the registers. The day's books stream is replayed (books_verify), as for counts."""
    problems = [
        p for p in books_verify(gaming_day_id=day.pk) if p["code"] in ("register_not_as_recorded", "register_missing")
    ]
    if not problems:
        return
    raise Conflict(
        "register_not_as_recorded",
        "A control register of the day is not what the audit trail recorded for it.",
        details={"registers": [p["register"] for p in problems]},
    )


def _register_figures(day: GamingDay) -> tuple[list[dict[str, Any]], int]:
    """Per table and per session, the day's accounts (art. 72); the counted figure is per
    table (one box per table), the carried figure is the higher of expected and counted,
    table by table: a surplus at one table never covers a shortfall at another. A table's
    tips (its count's `tips`) are on its line, apart: never in the total (register_tips)."""
    counts = {c.table_id: c for c in current_counts(gaming_day_id=day.pk)}
    tables = list(floor_selectors.day_tables(gaming_day_id=day.pk))
    missing = [t.number for t in tables if t.pk not in counts]
    if missing:
        raise Conflict("cagnotte_not_counted", "Count the cagnotte of every table first.",
                       details={"tables": missing})  # fmt: skip
    _refuse_counts_not_as_recorded(day)
    session_figures = report_selectors.session_figures(gaming_day_id=day.pk)
    sessions: dict[int, list] = {}
    for s in floor_selectors.day_sessions(gaming_day_id=day.pk):
        f = session_figures.get(s.pk, {})
        sessions.setdefault(s.table_id, []).append({
            "session": s.pk, "number": s.number,
            "opened_at": s.opened_at.isoformat(), "closed_at": s.closed_at.isoformat() if s.closed_at else None,
            "coups": f.get("coups", 0), "expected_cagnotte": f.get("expected_cagnotte", 0),
        })  # fmt: skip
    # The count's expected figure was worked out from the house postings when the box was
    # counted; its sessions were closed by then, so their levies cannot have changed since
    # but by an edit behind the services. Nobody writes or signs a register over that.
    changed = [
        t.number for t in tables
        if sum(line["expected_cagnotte"] for line in sessions.get(t.pk, [])) != counts[t.pk].expected
    ]  # fmt: skip
    if changed:
        raise Conflict("levies_changed_since_count",
                       "The levies recorded at a table no longer add up to its count's expected cagnotte.",
                       details={"tables": changed})  # fmt: skip
    from .unclaimed import register_deposits  # (unclaimed reads this module's books_stream)

    # The stakes and winnings left unclaimed and deposited (RULES.md §6), per table, so that
    # the two signatures cover them too; apart from the cagnotte, never in its total. A line
    # says them only when the table had some: a register written before they were recorded
    # (or of a day without any) still agrees with the books.
    deposits = register_deposits(gaming_day_id=day.pk)
    lines = []
    for t in tables:
        c = counts[t.pk]
        lines.append({
            "table": t.pk, "number": t.number, "sessions": sessions.get(t.pk, []), "count": c.pk,
            "expected": c.expected, "counted": c.counted, "surplus": c.surplus, "shortfall": c.shortfall,
            "carried": c.carried,
        })  # fmt: skip
        if t.pk in deposits:
            lines[-1]["unclaimed"] = deposits[t.pk]
        # The tips box counted with the cagnotte's (RULES.md §6): the staff's, never carried.
        # Said only when the count recorded them: a register written before they were (its
        # counts' tips are NULL) still agrees with the books, and its signatures stand.
        if c.tips is not None:
            lines[-1]["tips"] = c.tips
    return lines, sum(line["carried"] for line in lines)


def register_tips(lines: Any) -> int | None:
    """The day's tips on a register's lines: a figure of its own, beside the cagnotte total
    and never in it. None when no line says any (a register written before tips were
    recorded, or whose counts recorded none)."""
    said = [line["tips"] for line in lines or [] if isinstance(line, dict) and isinstance(line.get("tips"), int)]
    return sum(said) if said else None


def register_agrees(reg: ControlRegister) -> bool:
    """Whether the register still says what the counts in force say. A count corrected after
    the register was signed leaves it behind: it then needs a correction of its own
    (control_register_correct), with two new signatures."""
    try:
        lines, total = _register_figures(reg.gaming_day)
    except Conflict:
        return False
    return lines == reg.lines and total == reg.total


def current_register(*, gaming_day_id: int) -> ControlRegister | None:
    """The register in force: the last of the chain of corrections."""
    return (
        ControlRegister.objects.filter(gaming_day_id=gaming_day_id, corrected_by__isnull=True)
        .select_related("prepared_by", "first_signer", "second_signer")
        .order_by("-pk")
        .first()
    )


def _register_payload(reg: ControlRegister) -> dict[str, Any]:
    # The row's time too (the report prints when it was prepared): books_verify holds it.
    return {"register": reg.pk, "total": reg.total, "lines": reg.lines, "corrects": reg.corrects_id,
            "words_it": reg.total_words_it, "words_en": reg.total_words_en,
            "prepared_at": reg.prepared_at.isoformat(), "tips_total": reg.tips_total}  # fmt: skip


def _fill(reg: ControlRegister, day: GamingDay) -> None:
    reg.lines, reg.total = _register_figures(day)
    reg.total_words_it, reg.total_words_en = euros_it(reg.total), euros_en(reg.total)
    reg.tips_total = register_tips(reg.lines)  # apart from the total and its words


@transaction.atomic
def control_register_prepare(*, gaming_day: GamingDay, by: User) -> ControlRegister:
    """Write the control register of a closed day from the counts in force, or bring an
    unsigned one up to date. A signed register is never changed (`register_signed`): correct
    it with control_register_correct. A register with only its first signature is brought up
    to date only when a count was corrected since (else `register_signed`): that signature
    was given to figures no longer in force, so it is withdrawn, on record."""
    _require_direzione(by, "prepare the control register")
    day = _lock_closed_day(gaming_day)
    _refuse_registers_not_as_recorded(day)  # the register in force is read, and may be rewritten
    reg = current_register(gaming_day_id=day.pk)
    if reg is not None:
        reg = ControlRegister.objects.select_for_update().get(pk=reg.pk)
        if reg.signed or (reg.first_signer_id is not None and register_agrees(reg)):
            raise Conflict("register_signed", "The control register is signed; enter a correction instead.",
                           details={"register": reg.pk, "status": reg.status})  # fmt: skip
        old = _register_payload(reg)
        if reg.first_signer_id is not None:
            old["first_signer"], old["first_signed_at"] = reg.first_signer_id, reg.first_signed_at.isoformat()
            reg.first_signer, reg.first_signed_at = None, None
        _fill(reg, day)
        reg.prepared_by, reg.prepared_at = by, timezone.now()
        reg.save()
        record(stream=books_stream(day.pk), actor=by, action="control_register.updated", subject=reg,
               data={"old": old, "new": _register_payload(reg)})  # fmt: skip
        return reg
    reg = ControlRegister(gaming_day=day, prepared_by=by, prepared_at=timezone.now())
    _fill(reg, day)
    reg.save()
    record(stream=books_stream(day.pk), actor=by, action="control_register.prepared", subject=reg,
           data={"old": None, "new": _register_payload(reg)})  # fmt: skip
    return reg


def _enqueue_report_version(gaming_day_id: int, version: int) -> None:
    from celery import current_app

    from audit.tasks import report_build

    try:
        report_build.delay(gaming_day_id, version)
    except Exception as exc:
        if current_app.conf.task_always_eager:
            raise  # the build itself ran here and failed (make run, tests): not an enqueue failure
        # Redis is unreachable; the signature has committed, and with it the report's PENDING
        # row, which reports_sweep enqueues once it is older than the visibility timeout (as
        # floor.services._enqueue_report_build for version 1: one accurate line, not the
        # traceback on_commit would log).
        logger.error(
            "report enqueue failed for gaming day %s version %s (%s: %s); reports_sweep will enqueue it",
            gaming_day_id, version, type(exc).__name__, " ".join(str(exc).split())[:200],
        )  # fmt: skip


@transaction.atomic
def control_register_sign(*, register: ControlRegister, by: User) -> ControlRegister:
    """A signature of the director or another member of management (art. 72): two, by two
    different direzione users. The second signature makes the register final and asks for
    the next version of the day's report, which includes it."""
    _require_direzione(by, "sign the control register")
    day = floor_selectors.gaming_day_locked(pk=register.gaming_day_id)
    reg = ControlRegister.objects.select_for_update().get(pk=register.pk)
    # Before what its row says is read: its signatures or figures may be edited ones.
    _refuse_registers_not_as_recorded(day)
    if reg.signed:
        raise Conflict("already_signed", "The control register has both signatures already.",
                       details={"register": reg.pk})  # fmt: skip
    if reg.first_signer_id == by.pk:
        raise Conflict("second_signer_must_differ", "The second signature must be another person's.",
                       details={"register": reg.pk, "first_signer": reg.first_signer_id})  # fmt: skip
    lines, total = _register_figures(day)
    if lines != reg.lines or total != reg.total:
        # A count was corrected (or a deposit recorded) since the register was written:
        # signers sign what is in force.
        raise Conflict("register_stale", "The counts or the unclaimed deposits changed since the register was "
                       "written; prepare it again.",
                       details={"register": reg.pk})  # fmt: skip
    now = timezone.now()
    if reg.first_signer_id is None:
        reg.first_signer, reg.first_signed_at = by, now
        reg.save(update_fields=["first_signer", "first_signed_at"])
        slot = "first"
    else:
        reg.second_signer, reg.second_signed_at = by, now
        reg.save(update_fields=["second_signer", "second_signed_at"])
        slot = "second"
    record(stream=books_stream(day.pk), actor=by, action="control_register.signed", subject=reg,
           data={"old": None, "new": {"register": reg.pk, "signature": slot, "total": reg.total,
                                      "signed_at": now.isoformat()}})  # fmt: skip
    if reg.signed:
        last = DayReport.objects.filter(gaming_day=day).order_by("-version").values_list("version", flat=True).first()
        report = DayReport.objects.create(
            gaming_day=day, version=max(last or 1, 1) + 1, control_register=reg, requested_at=now,
            language=settings.REPORT_LANGUAGE,
        )
        transaction.on_commit(lambda: _enqueue_report_version(day.pk, report.version), robust=True)
    return reg


@transaction.atomic
def control_register_correct(*, register: ControlRegister, by: User, reason: str) -> ControlRegister:
    """A later correction of a signed register: a new register, from the counts in force,
    that refers to it. It needs its own two signatures. Refused while the signed register
    agrees with the counts in force (`register_unchanged`): it would say the same again."""
    _require_direzione(by, "correct the control register")
    reason = clean_text(reason, ControlRegister, "reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the register is corrected.")
    day = _lock_closed_day(register.gaming_day)
    old = ControlRegister.objects.select_for_update().get(pk=register.pk)
    _refuse_registers_not_as_recorded(day)  # a correction refers to it: not to an edited row
    if not old.signed:
        raise Conflict("register_not_signed", "An unsigned register is brought up to date, not corrected.",
                       details={"register": old.pk, "status": old.status})  # fmt: skip
    if ControlRegister.objects.filter(corrects=old).exists():
        raise Conflict("already_corrected", "This register was corrected already; correct the latest one.",
                       details={"register": old.pk})  # fmt: skip
    if register_agrees(old):  # its figures are the counts in force: a correction would repeat them
        raise Conflict("register_unchanged", "The signed register says what the counts in force say; "
                       "correct a count first, then the register.", details={"register": old.pk, "total": old.total})  # fmt: skip
    reg = ControlRegister(gaming_day=day, corrects=old, reason=reason, prepared_by=by, prepared_at=timezone.now())
    _fill(reg, day)
    reg.save()
    record(stream=books_stream(day.pk), actor=by, action="control_register.corrected", subject=reg,
           data={"old": _register_payload(old), "new": _register_payload(reg), "reason": reason})  # fmt: skip
    return reg


_UNSAID = object()  # a signature's time its event did not record (written before it did)


def _replay_books(
    counts: dict, registers: dict, action: str, subject: str, actor: Any, payload: Any, deposits: dict | None = None
) -> None:
    """One books event: what the count, register or unclaimed deposit it recorded holds after it."""
    if action in ("unclaimed.deposited", "unclaimed.returned") and deposits is not None:
        deposits[subject] = payload["new"]
    elif action in ("cagnotte.counted", "cagnotte.count_corrected"):
        counts[subject] = payload["new"]
    elif action in ("control_register.prepared", "control_register.updated", "control_register.corrected"):
        signed = registers.get(subject, {"signers": [None, None], "signed_at": [None, None], "reason": ""})
        if action == "control_register.updated":  # a first signature on figures no longer in force is withdrawn
            signed = {**signed, "signers": [None, None], "signed_at": [None, None]}
        # Who prepared it: the event's actor; a correction's reason: its event's.
        reason = payload.get("reason", "") if action == "control_register.corrected" else signed["reason"]
        registers[subject] = {"figures": payload["new"], "signers": signed["signers"],
                              "signed_at": signed["signed_at"], "prepared_by": actor, "reason": reason}  # fmt: skip
    elif action == "control_register.signed" and subject in registers:
        slot = 0 if payload["new"]["signature"] == "first" else 1
        signed_at = payload["new"].get("signed_at", _UNSAID)
        registers[subject]["signers"][slot] = actor
        registers[subject]["signed_at"][slot] = signed_at


def books_verify(*, gaming_day_id: int) -> list[dict[str, Any]]:
    """The day's counts and control registers as their events in the day's books stream
    say they are: every row was written by an event, and holds what the last event about it
    recorded (figures, witness, note, signers, and the times the report prints: a count's,
    each signature's, where its event records the row's own, as those written since do).
    The stream is hash-chained, the rows are not: an edit made behind the services (in SQL)
    shows here. One problem per row, [] if none."""
    from .unclaimed import deposit_payload  # (unclaimed reads this module's books_stream)

    counts: dict[str, dict[str, Any]] = {}
    registers: dict[str, dict[str, Any]] = {}
    deposits: dict[str, Any] = {}
    events = (
        AuditEvent.objects.filter(stream__name=books_stream(gaming_day_id))
        .order_by("seq")
        .values_list("action", "subject_id", "actor_id", "payload_json")
    )
    for action, subject, actor, payload_json in events.iterator():
        try:
            _replay_books(counts, registers, action, subject, actor, json.loads(payload_json), deposits)
        except (ValueError, KeyError, TypeError, AttributeError):
            # Not what its action writes (rewritten): replayed as nothing, so the row it
            # recorded is named as not as recorded (and the chain check names the event).
            continue
    problems: list[dict[str, Any]] = []
    rows = CagnotteCount.objects.filter(gaming_day_id=gaming_day_id).select_related("table").order_by("pk")
    for count in rows:
        recorded = counts.pop(str(count.pk), None)
        row = json.loads(json.dumps(_count_payload(count)))
        if isinstance(recorded, dict) and "counted_at" not in recorded:  # written before it said it
            del row["counted_at"]
        if isinstance(recorded, dict) and "tips" not in recorded and count.tips is None:
            del row["tips"]  # written before tips were recorded; tips put in since are named
        if recorded != row:  # the table by its id and, as the desk says it, its number
            problems.append({"code": "count_not_as_recorded", "count": count.pk, "table": count.table_id,
                             "table_number": count.table.number})  # fmt: skip
    for reg in ControlRegister.objects.filter(gaming_day_id=gaming_day_id).order_by("pk"):
        recorded = registers.pop(str(reg.pk), None)
        times = [None if t is None else t.isoformat() for t in (reg.first_signed_at, reg.second_signed_at)]
        if recorded is not None:  # a signature whose event did not say its time: not held to one
            times = [t if said is not _UNSAID else _UNSAID for t, said in zip(times, recorded["signed_at"], strict=True)]
        figures = json.loads(json.dumps(_register_payload(reg)))
        written = recorded["figures"] if recorded is not None else None  # any shape a rewritten event gave it
        if isinstance(written, dict) and "prepared_at" not in written:  # written before it said it
            del figures["prepared_at"]
        if isinstance(written, dict) and "tips_total" not in written and reg.tips_total is None:
            del figures["tips_total"]  # written before tips were recorded; a figure put in since is named
        now = {"figures": figures, "signers": [reg.first_signer_id, reg.second_signer_id], "signed_at": times,
               "prepared_by": reg.prepared_by_id, "reason": reg.reason}  # fmt: skip
        if recorded != now:
            problems.append({"code": "register_not_as_recorded", "register": reg.pk})
    # An unclaimed deposit (RULES.md §6) as its last event left it: amount, kind, session, coup,
    # patron, where it went, and its return.
    for deposit in UnclaimedDeposit.objects.filter(gaming_day_id=gaming_day_id).select_related("session__table"):
        if deposits.pop(str(deposit.pk), None) != json.loads(json.dumps(deposit_payload(deposit))):
            problems.append({"code": "deposit_not_as_recorded", "deposit": deposit.pk,
                             "table_number": deposit.session.table.number})  # fmt: skip
    problems += [{"code": "count_missing", "count": int(pk)} for pk in counts]
    problems += [{"code": "register_missing", "register": int(pk)} for pk in registers]
    problems += [{"code": "deposit_missing", "deposit": int(pk)} for pk in deposits]
    return problems


def before_gaming_day_open(*, casino: Any, date: Any, by: Any) -> dict[str, Any] | None:
    """floor's hook (floor/hooks.py): the control register of the casino's last closed day is
    entered, with both signatures and agreeing with the counts in force, before the next day
    starts (RULES.md §8, art. 72). Per
    settings.GAMING_DAY_OPEN_UNSIGNED_REGISTER the opening is refused, or recorded with the
    register it found unsigned."""
    last = floor_selectors.last_closed_gaming_day(casino=casino)
    if last is None:
        return None
    reg = current_register(gaming_day_id=last.pk)
    # A register whose signatures were written in SQL is no signed register: the day's
    # registers are held to their events as before a signature (books_verify).
    forged = reg is not None and reg.signed and any(
        p["code"] in ("register_not_as_recorded", "register_missing") for p in books_verify(gaming_day_id=last.pk)
    )
    if reg is not None and reg.signed and register_agrees(reg) and not forged:
        return None
    # A signed register a count has since left behind needs its correction signed first.
    status = "missing" if reg is None else "not_as_recorded" if forged else "stale" if reg.signed else reg.status
    facts = {"gaming_day": last.pk, "date": last.date.isoformat(),
             "register": None if reg is None else reg.pk, "status": status}  # fmt: skip
    if settings.GAMING_DAY_OPEN_UNSIGNED_REGISTER == "refuse":
        raise Conflict(
            "control_register_not_signed",
            "The control register of the previous gaming day is not signed: it is entered before the "
            "next day starts (art. 72).",
            details=facts,
        )
    return {"unsigned_register": facts}
