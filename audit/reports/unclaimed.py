"""Unclaimed stakes and winnings (RULES.md §6; seed 001: "Le puntate e le vincite non
riscosse sono ritirate dal Commissario e depositate conformemente alle disposizioni della
Direzione Giochi").

The Commissario di Gioco records each deposit: the table session (and so the gaming day) it
was collected at, the coup and the patron when known, stake or winnings, the amount, where it
was deposited (an envelope or cash-desk receipt number) and a note. A patron who comes back
is handed it: the Commissario or the Direzione records the return, once.

They are among the day's books: each write is one transaction with its event in the stream
"day_books:<day id>" (as the cagnotte counts and the control register), and the day's
deposits go into the control register's lines (art. 72), so its two signatures cover them. A
deposit is recorded while the day is open and after its close until the day's control
register in force carries both signatures (`books_signed`); a return is recorded whenever
the patron comes back (it changes nothing the register says: what was collected that day)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from audit.models import UnclaimedDeposit
from audit.services import record
from config.errors import ApplicationError, Conflict, NotAllowed, clean_text
from floor import selectors as floor_selectors
from floor.roles import Role, has_role

from .registers import books_stream, current_register

if TYPE_CHECKING:
    from floor.models import GamingDay, Patron, TableSession

User = AbstractBaseUser

# Who records a deposit, and who hands one back.
DEPOSIT_ROLES = (Role.COMMISSARIO,)
RETURN_ROLES = (Role.COMMISSARIO, Role.DIREZIONE)
# A stake or winnings left on a table, cents: ten million euro is past any bank a table holds;
# beyond it the figure is a typing error (and a PostgreSQL bigint is never at stake).
MAX_DEPOSIT_CENTS = 10**9
# A coup whose stakes are still in play is not one whose stakes were left unclaimed.
FINISHED_COUPS = ("settled", "annulled")


def deposit_payload(d: UnclaimedDeposit) -> dict[str, Any]:
    """What the events record of a deposit (books_verify holds the row to it)."""
    return {
        "deposit": d.pk,
        "session": d.session_id,
        "coup": d.coup_id,
        "patron": d.patron_id,
        "kind": d.kind,
        "amount": d.amount,
        "deposited_in": d.deposited_in,
        "note": d.note,
        "recorded_by": d.recorded_by_id,
        "recorded_at": d.recorded_at.isoformat(),
        "returned_to": d.returned_to,
        "returned_patron": d.returned_patron_id,
        "returned_note": d.returned_note,
        "returned_by": d.returned_by_id,
        "returned_at": None if d.returned_at is None else d.returned_at.isoformat(),
    }


def payload_digest(payload: Any) -> str:
    """A deposit's payload (deposit_payload, or an event's `new`) as one SHA-256: what the
    end-of-day report keeps of each deposit it lists, to hold its rows to the trail."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- reads


def deposit_list() -> QuerySet[UnclaimedDeposit]:
    """Every deposit with what a list shows of it, in one query however many there are."""
    return UnclaimedDeposit.objects.select_related(
        "session__table", "coup", "patron", "recorded_by", "returned_by", "returned_patron"
    ).order_by("gaming_day_id", "recorded_at", "pk")


def day_deposits(*, gaming_day_id: int) -> QuerySet[UnclaimedDeposit]:
    return deposit_list().filter(gaming_day_id=gaming_day_id)


def day_deposit_patron_ids(*, gaming_day_id: int) -> tuple[QuerySet, ...]:
    """The ids of the patrons the day's deposits name (whose stake it was, to whom handed
    back), as querysets for a UNION (tables.report_selectors.day_named_patron_ids)."""
    deposits = UnclaimedDeposit.objects.filter(gaming_day_id=gaming_day_id).order_by()
    return (
        deposits.filter(patron_id__isnull=False).values_list("patron_id", flat=True),
        deposits.filter(returned_patron_id__isnull=False).values_list("returned_patron_id", flat=True),
    )


def day_totals(*, gaming_day_id: int) -> dict[str, int]:
    """The day's deposits in cents: all, by kind, outstanding and returned (one query)."""
    money = {
        "total": Sum("amount"),
        "stakes": Sum("amount", filter=Q(kind=UnclaimedDeposit.Kind.STAKE)),
        "winnings": Sum("amount", filter=Q(kind=UnclaimedDeposit.Kind.WINNINGS)),
        "outstanding": Sum("amount", filter=Q(returned_at__isnull=True)),
        "returned": Sum("amount", filter=Q(returned_at__isnull=False)),
    }
    row = UnclaimedDeposit.objects.filter(gaming_day_id=gaming_day_id).aggregate(count=Count("pk"), **money)
    return {key: value or 0 for key, value in row.items()}


def register_deposits(*, gaming_day_id: int) -> dict[int, dict[str, int]]:
    """Per table, the deposits collected on the day, for the control register's lines: what
    was collected (stakes, winnings, how many), not what was handed back since."""
    rows = (
        UnclaimedDeposit.objects.filter(gaming_day_id=gaming_day_id)
        .values("session__table_id")
        .annotate(
            count=Count("pk"),
            stakes=Sum("amount", filter=Q(kind=UnclaimedDeposit.Kind.STAKE)),
            winnings=Sum("amount", filter=Q(kind=UnclaimedDeposit.Kind.WINNINGS)),
        )
        .order_by()
    )
    return {
        row["session__table_id"]: {
            "count": row["count"], "stakes": row["stakes"] or 0, "winnings": row["winnings"] or 0,
            "total": (row["stakes"] or 0) + (row["winnings"] or 0),
        }
        for row in rows
    }  # fmt: skip


# --------------------------------------------------------------------------- writes


def _check_amount(amount: Any) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_DEPOSIT_CENTS:
        raise ApplicationError(
            "invalid_amount",
            f"The amount is a whole number of cents, from 1 to {MAX_DEPOSIT_CENTS}.",
            details={"amount": amount if isinstance(amount, int) else str(amount)[:40],
                     "max": MAX_DEPOSIT_CENTS},
        )  # fmt: skip
    return amount


@transaction.atomic
def unclaimed_deposit_record(
    *,
    session: TableSession,
    by: User,
    kind: str,
    amount: int,
    deposited_in: str,
    note: str = "",
    coup: Any | None = None,
    patron: Patron | None = None,
    gaming_day: GamingDay | None = None,
) -> UnclaimedDeposit:
    """The Commissario deposits a stake or winnings left unclaimed at `session`'s table.
    The gaming day is the session's (`gaming_day`, when the caller names one, must be it:
    `session_not_of_day`). Refused once the day's control register in force is
    signed by both (`books_signed`): its figures are final; the deposit belongs in them."""
    if not has_role(by, *DEPOSIT_ROLES):
        raise NotAllowed("permission_denied", "Only the Commissario di Gioco records an unclaimed deposit.")
    if kind not in UnclaimedDeposit.Kind.values:
        raise ApplicationError("unknown_kind", "The kind is `stake` (puntata) or `winnings` (vincita).",
                               details={"kind": str(kind)[:40]})  # fmt: skip
    amount = _check_amount(amount)
    deposited_in = clean_text(deposited_in, UnclaimedDeposit, "deposited_in")
    if not deposited_in:
        raise ApplicationError(
            "deposit_place_required", "Say where it was deposited (envelope or receipt number)."
        )
    note = clean_text(note, UnclaimedDeposit, "note")
    if gaming_day is not None and session.gaming_day_id != gaming_day.pk:
        raise ApplicationError("session_not_of_day", "The table session is not one of this gaming day.",
                               details={"session": session.pk, "gaming_day": gaming_day.pk})  # fmt: skip
    if coup is not None and coup.session_id != session.pk:
        raise ApplicationError("coup_not_of_session", "The coup was not played at this table session.",
                               details={"coup": coup.pk, "session": session.pk})  # fmt: skip
    # Locks in the house order: the gaming day, then the session.
    day = floor_selectors.gaming_day_locked(pk=session.gaming_day_id)
    reg = current_register(gaming_day_id=day.pk)
    if reg is not None and reg.signed:
        raise Conflict(
            "books_signed",
            "The day's control register is signed: its books are final. A deposit found later is recorded "
            "on the day it is collected.",
            details={"gaming_day": day.pk, "register": reg.pk},
        )
    if coup is not None and coup.state not in FINISHED_COUPS:
        raise Conflict("coup_in_play", "The coup is still in play: its stakes are not unclaimed yet.",
                       details={"coup": coup.pk, "state": coup.state})  # fmt: skip
    deposit = UnclaimedDeposit.objects.create(
        gaming_day=day, session=session, coup=coup, patron=patron, kind=kind, amount=amount,
        deposited_in=deposited_in, note=note, recorded_by=by, recorded_at=timezone.now(),
    )  # fmt: skip
    record(stream=books_stream(day.pk), actor=by, action="unclaimed.deposited", subject=deposit,
           data={"old": None, "new": deposit_payload(deposit)})  # fmt: skip
    return deposit


@transaction.atomic
def unclaimed_deposit_return(
    *,
    deposit: UnclaimedDeposit,
    by: User,
    returned_to: str = "",
    patron: Patron | None = None,
    note: str = "",
) -> UnclaimedDeposit:
    """A patron comes back for what he left: it is handed to him, on record, once
    (`already_returned`). Whom: the patron (by his record) and/or a name as written on the
    receipt; at least one."""
    if not has_role(by, *RETURN_ROLES):
        raise NotAllowed("permission_denied", "Only the Commissario or the Direzione hands back a deposit.")
    returned_to = clean_text(returned_to, UnclaimedDeposit, "returned_to")
    note = clean_text(note, UnclaimedDeposit, "returned_note")
    if not returned_to and patron is None:
        raise ApplicationError("claimant_required", "Say to whom it is handed back: the patron or a name.")
    if not returned_to:
        returned_to = clean_text(patron.full_name, UnclaimedDeposit, "returned_to")
    floor_selectors.gaming_day_locked(pk=deposit.gaming_day_id)
    old = UnclaimedDeposit.objects.select_for_update().get(pk=deposit.pk)
    if old.returned:
        raise Conflict("already_returned", "This deposit was handed back already.",
                       details={"deposit": old.pk, "returned_at": old.returned_at.isoformat(),
                                "returned_to": old.returned_to})  # fmt: skip
    before = deposit_payload(old)
    old.returned_to, old.returned_patron, old.returned_note = returned_to, patron, note
    old.returned_by, old.returned_at = by, timezone.now()
    old.save(update_fields=["returned_to", "returned_patron", "returned_note", "returned_by", "returned_at"])
    record(stream=books_stream(old.gaming_day_id), actor=by, action="unclaimed.returned", subject=old,
           data={"old": before, "new": deposit_payload(old)})  # fmt: skip
    return old
