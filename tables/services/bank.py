"""Banks: who holds the bank and for how much (RULES.md §2.1, §4, §5, §6)."""

from __future__ import annotations

from audit.services import HEAD as AUDIT_HEAD
from audit.services import batch as audit_batch
from audit.services import held_head
from config import prepared
from config.errors import ApplicationError, Conflict
from config.transactions import service_atomic
from floor.models import Patron, Seat, TableSession
from floor.selectors import session_can_start
from tables.engine.profiles import Continuation

from ..models import Bank, FauxTirageBar, FirstBankPass
from ..selectors import BARS, LAST_BANK, SEATS, GameRows, first_bank_turn
from ._common import (
    User,
    active_bank,
    audit,
    coup_in_play,
    is_barred,
    lock_session,
    now,
    place_of,
    profile_of,
)
from .succession import succession_end_for_session_close, succession_give_way, succession_start


def check_bank_amount(session: TableSession, amount: int) -> None:
    # RULES.md §2.1: a new bank is at least the table minimum; §6: the house may set a maximum.
    if type(amount) is not int or amount <= 0:
        raise ApplicationError(
            "bad_amount", "The bank is a positive whole number of cents.", details={"amount": amount}
        )
    if amount < session.minimum:
        raise ApplicationError(
            "bank_below_minimum",
            "A new bank is at least the table minimum.",
            details={"amount": amount, "minimum": session.minimum},
        )
    if session.maximum is not None and amount > session.maximum:
        raise ApplicationError(
            "bank_above_maximum",
            "The bank is above the table maximum.",
            details={"amount": amount, "maximum": session.maximum},
        )


@service_atomic
def bank_open(
    *, session: TableSession, by: User, patron: Patron, amount: int, origin: str | None = None
) -> Bank:
    """Open a bank. The first of the session goes to the player at the profile's first
    banker seat (seat 1, RULES.md §6) once the start rule holds; a later one (after a loss
    or a withdrawal) to a seated or standing patron. `origin` is the seam for the succession
    and the auction (§5): "succession" by default, or "auction" / "continuation"."""
    session = lock_session(session, by)
    with audit_batch():  # its events (a lapsed succession, the bank) in one write
        # The session's places and bars (the checks use them and the answer shows them), its
        # last bank and its audit stream's head, locked for the batch: one round trip
        # (config.prepared.read).
        sid = session.pk
        seats, bars, lasts, heads = prepared.read(
            (SEATS, (sid,)), (BARS, (sid,)), (LAST_BANK, (sid,)), (AUDIT_HEAD, (session.audit_stream,))
        )
        held_head(heads[0] if heads else None)
        bank = _bank_open(session, by, patron, amount, origin, seats, bars, lasts[0] if lasts else None)
    # The answer's game state reads what this holds no more (tables.selectors.GameRows).
    bank.game_rows = GameRows(session=session, last_bank=bank, seats=seats, bars=bars)
    return bank


def _bank_open(
    session: TableSession,
    by: User,
    patron: Patron,
    amount: int,
    origin: str | None,
    seats: list[Seat],
    bars: list[FauxTirageBar],
    last: Bank | None,
) -> Bank:
    profile_of(session)  # refuses a table whose profile is not chemin de fer
    # The last bank is the active one when one is (a bank opens only when none is active).
    if last is not None and last.status == Bank.Status.ACTIVE:
        raise Conflict("bank_already_active", "A bank is active at this table.")
    # place_of's answer from the places read (the first active place of the patron).
    seat = next((s for s in sorted(seats, key=lambda s: s.pk) if s.patron_id == patron.pk), None)
    if seat is None:
        seat = place_of(session, patron)  # refused with its code
    if any(bar.patron_id == patron.pk for bar in bars):
        # RULES.md §4 (art. 60): a barred player holds the cards no more this session; the
        # banker holds them, so he may not take the bank (as the succession and the asta refuse).
        raise ApplicationError(
            "patron_barred",
            "A barred patron may not hold the cards (faux tirage), so not the bank.",
            details={"patron": patron.pk},
        )
    first = last is None
    if first:
        if not session_can_start(session):
            raise ApplicationError(
                "not_enough_players",
                "The game starts when enough seats are taken.",
                details={"needed": session.table.min_seats_to_start},
            )
        _require_first_bank_turn(session, seat, seats, bars, list(FirstBankPass.objects.filter(session=session)))
        if origin not in (None, Bank.Origin.FIRST):
            raise ApplicationError("bad_origin", "The first bank of a session has origin 'first'.")
        origin = Bank.Origin.FIRST
    else:
        # Entered here, not through the succession's offers or the asta: the register says so.
        origin = origin or Bank.Origin.DIRECT
        if origin not in (Bank.Origin.SUCCESSION, Bank.Origin.AUCTION, Bank.Origin.CONTINUATION, Bank.Origin.DIRECT):
            raise ApplicationError("bad_origin", "Unknown bank origin.", details={"origin": origin})
    check_bank_amount(session, amount)
    # The succession (tables.services.succession) is how the bank passes by the rules (RULES.md
    # §5); a bank entered here directly ends a live one, recorded (refused while an auction
    # is open).
    if not first:
        succession_give_way(session=session, by=by, patron=patron)
    # The rotation pointer (RULES.md §5): the banker's seat; a standing banker keeps the last.
    turn_seat = seat.seat_number if seat.seat_number is not None else (last.turn_seat if last else None)
    bank = open_bank_row(
        session=session,
        by=by,
        patron_id=patron.pk,
        seat=seat,
        amount=amount,
        origin=origin,
        turn_seat=turn_seat,
        number=(last.number if last else 0) + 1,
    )
    bank.banker = patron
    return bank


def _require_first_bank_turn(
    session: TableSession, seat: Seat, seats: list[Seat], bars: list[FauxTirageBar], passes: list[FirstBankPass]
) -> int:
    turn = first_bank_turn(session, seats, bars, passes)
    if turn is None:
        raise Conflict(
            "first_bank_declined_by_all",
            "Every seated player has declined the first bank.",
            details={"declined": [p.patron_id for p in passes]},
        )
    if seat.seat_number != turn:
        raise ApplicationError(
            "not_first_banker_seat",
            "The first bank goes to the first occupied seat from seat 1 in rotation, "
            "after those who declined it.",
            details={"seat_number": seat.seat_number, "first_banker_seat": turn},
        )
    return turn


@service_atomic
def first_bank_pass(*, session: TableSession, by: User, patron: Patron) -> FirstBankPass:
    """The player whose turn it is for the session's first bank declines it ("passe", RULES.md
    §5): the turn goes to the next occupied seat in rotation. Before the first bank only."""
    session = lock_session(session, by)
    with audit_batch():
        sid = session.pk
        seats, bars, lasts, heads = prepared.read(
            (SEATS, (sid,)), (BARS, (sid,)), (LAST_BANK, (sid,)), (AUDIT_HEAD, (session.audit_stream,))
        )
        held_head(heads[0] if heads else None)
        if lasts:
            raise Conflict(
                "first_bank_opened",
                "The session's first bank is opened already: the bank passes by its succession.",
            )
        seat = next((s for s in sorted(seats, key=lambda s: s.pk) if s.patron_id == patron.pk), None)
        if seat is None:
            seat = place_of(session, patron)  # refused with its code
        if not session_can_start(session):
            raise ApplicationError(
                "not_enough_players",
                "The game starts when enough seats are taken.",
                details={"needed": session.table.min_seats_to_start},
            )
        passes = list(FirstBankPass.objects.filter(session=session))
        if seat.seat_number is None:
            raise ApplicationError(
                "not_first_banker_seat",
                "The first bank is offered to the seated players only.",
                details={"seat_number": None, "first_banker_seat": first_bank_turn(session, seats, bars, passes)},
            )
        turn = _require_first_bank_turn(session, seat, seats, bars, passes)
        row = FirstBankPass(session=session, patron=patron, seat=seat, seat_number=turn, at=now(), by=by)
        row.save()
        following = first_bank_turn(session, seats, bars, [*passes, row])
        audit(
            session,
            by,
            "bank.first_declined",
            row,
            {
                "patron": patron.pk,
                "seat": seat.pk,  # the place it was declined from (audit.reports.records holds it)
                "seat_number": turn,
                "next_seat": following,
                "at": row.at.isoformat(),
            },
        )
    row.game_rows = GameRows(session=session, seats=seats, bars=bars)
    return row


def open_bank_row(
    *,
    session: TableSession,
    by: User,
    patron_id: int,
    seat: Seat,
    amount: int,
    origin: str,
    turn_seat: int | None,
    number: int | None = None,
) -> Bank:
    """Write a new bank and its audit event; the caller holds the session lock and has
    checked who takes it and for how much (bank_open, the succession, the auction).
    `number`: the next bank number when the caller has read the last one already."""
    if number is None:
        number = (
            Bank.objects.filter(session=session).order_by("-number").values_list("number", flat=True).first()
            or 0
        ) + 1
    bank = Bank(
        session=session,
        number=number,
        banker_id=patron_id,
        seat=seat,
        amount=amount,
        initial_amount=amount,
        origin=origin,
        turn_seat=turn_seat,
        opened_at=now(),
        opened_by=by,
    )
    prepared.insert([bank])
    at = bank.opened_at
    audit(
        session,
        by,
        "bank.opened",
        bank,
        {
            "number": number,
            "banker": patron_id,
            "seat": seat.pk,
            "seat_number": seat.seat_number,
            "amount": amount,
            "origin": origin,
            "turn_seat": turn_seat,
            "at": at.isoformat(),
        },
    )
    return bank


@service_atomic
def bank_withdraw(*, bank: Bank, by: User) -> Bank:
    """The banker withdraws, taking the bank, after at least one completed coup (§4); a
    banker barred from holding the cards (faux tirage, art. 60) at any time between coups:
    he may not deal another, so his bank ends and passes as after a withdrawal."""
    session = lock_session(bank.session_id, by)
    bank = Bank.objects.select_for_update().get(pk=bank.pk)
    if bank.status != Bank.Status.ACTIVE:
        raise Conflict("bank_not_active", "This bank has ended.", details={"bank": bank.pk})
    if coup_in_play(session) is not None:
        raise Conflict("coup_in_progress", "The banker withdraws between coups.")
    if bank.coups_completed < 1 and not is_barred(session, bank.banker_id):
        raise ApplicationError("withdraw_too_early", "A banker withdraws after at least one completed coup.")
    # RULES.md §5: as the banker passes the hand, the bank is offered (seguito all'altezza,
    # an equal bank, the domestic continuation); the bank's end is the withdrawal's last event.
    succession_start(session=session, bank=bank, by=by, reason=Bank.EndReason.WITHDRAWN)
    _end(session, bank, by, Bank.EndReason.WITHDRAWN)
    return bank


@service_atomic
def bank_raise(*, bank: Bank, by: User, amount: int) -> Bank:
    """domestic: the bank continues at no less than the stake the rules require (2S after a
    win, S after a tie), and the banker may put up more (RULES.md §4: "at least 2S"; the
    reserve B - S is not forced back in, nor kept out). Between coups, up to the table
    maximum. Elsewhere the continuation is fixed (venezia: the whole stake): refused."""
    session = lock_session(bank.session_id, by)
    bank = Bank.objects.select_for_update().get(pk=bank.pk)
    if bank.status != Bank.Status.ACTIVE:
        raise Conflict("bank_not_active", "This bank has ended.", details={"bank": bank.pk})
    profile = profile_of(session)
    if profile.continuation != Continuation.AT_LEAST_DOUBLE_STAKE:
        raise Conflict(
            "bank_raise_not_in_profile",
            "At this table the bank continues at the stake the rules fix.",
            details={"profile": profile.name},
        )
    if coup_in_play(session) is not None:
        raise Conflict("coup_in_progress", "The bank is raised between coups.")
    if is_barred(session, bank.banker_id):
        raise Conflict(
            "banker_barred",
            "The banker is barred from holding the cards (faux tirage): his bank ends; withdraw it.",
            details={"bank": bank.pk, "banker": bank.banker_id},
        )
    if bank.coups_completed < 1:
        raise ApplicationError("bank_raise_too_early", "A new bank is opened at the amount wanted: raise it after a coup.")
    if type(amount) is not int or amount <= bank.amount:
        raise ApplicationError(
            "bank_raise_not_higher", "A raise puts the bank above its amount.",
            details={"amount": amount, "bank": bank.amount},
        )  # fmt: skip
    if session.maximum is not None and amount > session.maximum:
        raise ApplicationError(
            "bank_above_maximum", "The bank is above the table maximum.",
            details={"amount": amount, "maximum": session.maximum},
        )  # fmt: skip
    old, bank.amount = bank.amount, amount
    bank.raised += amount - old
    bank.save(update_fields=["amount", "raised"])
    audit(session, by, "bank.raised", bank,
          {"number": bank.number, "banker": bank.banker_id, "old": old, "new": amount, "added": amount - old})  # fmt: skip
    return bank


def _end(session: TableSession, bank: Bank, by: User, reason: str) -> None:
    bank.status, bank.end_reason, bank.ended_at, bank.ended_by = Bank.Status.ENDED, reason, now(), by
    bank.save(update_fields=["status", "end_reason", "ended_at", "ended_by"])
    audit(
        session,
        by,
        f"bank.{reason}",
        bank,
        {
            "number": bank.number,
            "banker": bank.banker_id,
            "amount": bank.amount,
            "initial_amount": bank.initial_amount,
            "coups_completed": bank.coups_completed,
            "end_reason": reason,
            "at": bank.ended_at.isoformat(),
        },
    )


@service_atomic
def bank_end_for_session_close(*, session: TableSession, by: User) -> Bank | None:
    """After the Commissario closes the session (floor does not import tables), the active
    bank ends with reason session_closed. Safe to call twice: None when no bank is active."""
    session = TableSession.objects.select_for_update(of=("self",)).select_related("table").get(pk=session.pk)
    if not session.is_closed:
        raise Conflict("session_not_closed", "The session is still in play.")
    bank = active_bank(session)
    succession_end_for_session_close(session=session, by=by)  # a bank waiting for a successor
    if bank is None:
        return None
    _end(session, bank, by, Bank.EndReason.SESSION_CLOSED)
    return bank
