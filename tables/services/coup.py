"""The coup at the table (RULES.md §2, §3.3): open, bets and banco calls, rien ne va plus,
the cards one at a time, the declarations, the reconstruction.

Each public service is one transaction: it locks (session -> bank -> coup), then calls the
matching `_step` function, which assumes the locks are held. coup_record runs the same
steps in order under one lock, so a one-shot coup and a coup entered card by card go
through exactly the same checks and write exactly the same rows and audit events.

The steps share a `_Play`: the locked rows, the shoe's parsed state and what the request
already read (the coup's bets and calls, the bars, the places), so a one-shot coup reads
each once. Its writes are deferred and made once: the coup's changed columns in one UPDATE,
the shoe's new cards in one INSERT and its state in one UPDATE (`_Play.flush`, before the
settlement and at the end), the audit events in one batch (audit.services.batch)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from django.db.models import Case, Value, When

from audit.services import HEAD as AUDIT_HEAD
from audit.services import batch as audit_batch
from audit.services import held_head
from config import prepared
from config.errors import ApplicationError, Conflict, NotAllowed, clean_text
from config.transactions import service_atomic
from floor.models import Patron, Seat, TableSession
from floor.roles import Role, has_role
from tables.engine import BANKER, PENDING, PUNTA, live, resolve
from tables.engine.cards import parse_card
from tables.engine.errors import EngineError
from tables.engine.profiles import TieRule
from tables.selectors import ACTIVE_SHOE, BARS, LAST_COUP, MARKS, SEATS, GameRows

from ..models import COUP_FINISHED, BancoCall, Bet, Coup, FauxTirageBar, RegolaMark, Shoe, ShoeCard
from ._common import (
    ACTIVE_BANK,
    User,
    audit,
    check_actor,
    engine_errors,
    lock_coup,
    lock_session,
    now,
    place_of,
    profile_of,
)
from .settlement import settle_coup
from .shoe import ShoeDraw

# --------------------------------------------------------------------------- the request's state

_UNKNOWN = object()


class _Play:
    """What one request knows of the coup it plays: the locked session (with its table),
    the coup (with its locked bank), the shoe as ShoeDraw, and what it has read or written
    so far (None: not read yet, read from the database when a step needs it)."""

    def __init__(self, session: TableSession, by: User, coup: Coup | None = None):
        self.session, self.by, self.coup = session, by, coup
        self.shoe_row: Shoe | None = None
        self._shoe: ShoeDraw | None = None
        self._dirty: set[str] = set()
        self._bars: list[FauxTirageBar] | None = None
        self._marks: list[RegolaMark] | None = None
        self._seats: list[Seat] | None = None
        self.bets: list[Bet] | None = None  # the coup's bets in order, their seats loaded
        self.calls: list[BancoCall] | None = None  # its banco calls in order, seats loaded
        self.places: dict[int, Seat] = {}  # patron id -> active place, when preloaded
        self.previous: Any = _UNKNOWN  # the session's coup before this one (coup_open knows it)

    def shoe(self) -> ShoeDraw:
        if self._shoe is None:
            row = self.shoe_row or Shoe.objects.get(pk=self.coup.shoe_id)
            self._shoe = ShoeDraw(row)
        return self._shoe

    def bars(self) -> list[FauxTirageBar]:
        """The session's faux-tirage bars (RULES.md §4), their patrons loaded: one query."""
        if self._bars is None:
            self._bars = BARS.all(self.session.pk)
        return self._bars

    def barred(self) -> set[int]:
        return {bar.patron_id for bar in self.bars()}

    def marks(self) -> list[RegolaMark]:
        """The session's Regola marks (RULES.md §3.2), their patrons loaded: one query."""
        if self._marks is None:
            self._marks = MARKS.all(self.session.pk)
        return self._marks

    def seats(self) -> list[Seat]:
        """The session's active places, seated and standing, their patrons loaded: one query."""
        if self._seats is None:
            self._seats = SEATS.all(self.session.pk)
        return self._seats

    def load_bets(self) -> list[Bet]:
        if self.bets is None:
            self.bets = list(self.coup.bets.select_related("seat").order_by("order"))
        return self.bets

    def load_calls(self) -> list[BancoCall]:
        if self.calls is None:
            self.calls = list(self.coup.banco_calls.select_related("seat").order_by("order"))
        return self.calls

    def preload_places(self, patron_ids: Iterable[int]) -> None:
        """The active places of these patrons, from the session's places read once (the
        answer's game state shows them all anyway; place_of's order: the first wins)."""
        wanted = set(patron_ids) - set(self.places)
        if wanted:
            for seat in self.seats():
                if seat.patron_id in wanted:
                    self.places.setdefault(seat.patron_id, seat)

    def place(self, patron: Patron) -> Seat:
        seat = self.places.get(patron.pk)
        return seat if seat is not None else place_of(self.session, patron)

    def save(self, fields: Iterable[str]) -> None:
        """The coup's columns changed in memory, written by flush()."""
        self._dirty.update(fields)

    def take_dirty(self) -> set[str]:
        """The coup's columns not written yet; whoever takes them writes them."""
        fields, self._dirty = self._dirty, set()
        return fields

    def game_rows(self) -> GameRows:
        """What this request holds, as the answer's game state wants it (selectors.GameRows).
        Call after the last flush: the rows are then as written."""
        draw = self._shoe
        return GameRows(
            session=self.session,
            last_bank=None if self.coup is None else self.coup.bank,
            shoe=draw.shoe if draw is not None else self.shoe_row,
            shoe_state=None if draw is None else draw.state,
            coup=self.coup,
            bets=self.bets,
            calls=self.calls,
            seats=self._seats,
            marks=self._marks,
            bars=self._bars,
            succession=getattr(self.coup, "started_succession", None) if self.coup is not None else None,
        )

    def flush(self) -> None:
        """Write what the steps deferred: the coup's changed columns, the shoe's cards and state."""
        if self._dirty:
            prepared.update(self.coup, sorted(self._dirty))
            self._dirty = set()
        if self._shoe is not None:
            self._shoe.flush()


def _played(session: TableSession, coup: Coup, by: User, step, *args) -> Coup:
    """Run one step of a locked coup, its writes flushed and its audit events batched."""
    play = _Play(session, by, coup)
    with audit_batch():
        step(play, *args)
        play.flush()
    coup.game_rows = play.game_rows()
    return coup


# --------------------------------------------------------------------------- opening


def _coup_open(play: _Play) -> Coup:
    session, by = play.session, play.by
    profile_of(session)
    # What opening needs, the places, bars and marks every coup reads (its bets, the punta,
    # the answer's game state) and the audit stream's head, locked for the events the caller's
    # batch writes: one round trip (config.prepared.read).
    sid = session.pk
    banks, shoes, previous, play._seats, play._bars, play._marks, heads = prepared.read(
        (ACTIVE_BANK, (sid,)), (ACTIVE_SHOE, (sid,)), (LAST_COUP, (sid,)),
        (SEATS, (sid,)), (BARS, (sid,)), (MARKS, (sid,)), (AUDIT_HEAD, (session.audit_stream,)),
    )  # fmt: skip
    held_head(heads[0] if heads else None)
    bank = banks[0] if banks else None
    if bank is None:
        raise Conflict("no_active_bank", "No bank is active at this table.")
    shoe = shoes[0] if shoes else None
    if shoe is None:
        raise Conflict("no_shoe", "No shoe is loaded at this table.")
    if shoe.stop_card_reached_at is not None:
        # RULES.md §6 (art. 58): once the stop card appears no further coup is dealt.
        raise Conflict(
            "stop_card_reached",
            "The stop card has appeared: load a new shoe.",
            details={"shoe": shoe.pk, "seq": shoe.seq},
        )
    previous = previous[0] if previous else None
    if previous is not None and previous.state not in COUP_FINISHED:
        raise Conflict(
            "coup_in_progress",
            "A coup is in play at this table.",
            details={"coup": previous.pk, "state": previous.state},
        )
    if any(bar.patron_id == bank.banker_id for bar in play._bars):
        # RULES.md §4 (art. 60): a barred player may not hold the cards, the banker's least
        # of all; his bank ends (bank_withdraw, which allows it before a completed coup).
        raise Conflict(
            "banker_barred",
            "The banker is barred from holding the cards (faux tirage): his bank ends; withdraw it.",
            details={"bank": bank.pk, "banker": bank.banker_id},
        )
    coup = Coup(
        session=session,
        bank=bank,
        shoe=shoe,
        number=(previous.number if previous else 0) + 1,
        bank_amount=bank.amount,
        opened_at=now(),
        opened_by=by,
    )
    prepared.insert([coup])
    coup.bank, coup.session, coup.shoe = bank, session, shoe
    play.coup, play.shoe_row, play.previous = coup, shoe, previous
    play.bets, play.calls = [], []
    carried = _carry_after_tie(play, previous)
    audit(
        session,
        by,
        "coup.opened",
        coup,
        {
            "number": coup.number,
            "bank": bank.pk,
            "banker": bank.banker_id,
            "bank_amount": coup.bank_amount,
            "shoe": shoe.pk,
            "carried_bets": carried,
        },
    )
    return coup


def _carry_after_tie(play: _Play, previous: Coup | None) -> list[dict]:
    """classic / chemmy-fi ties: the bets stay on the table for the next coup (engine
    tie_outcome, in the settled payload). A bettor who left the table takes his bet back."""
    coup, by = play.coup, play.by
    if previous is None or previous.bank_id != coup.bank_id or not previous.settlement:
        return []
    tie = previous.settlement.get("tie")
    if not tie or not tie.get("bets_stay"):
        return []
    at = now()
    carried = []
    bets = previous.bets.select_related("seat").order_by("order")
    for bet in bets:
        if bet.seat.left_at is not None:
            continue
        if bet.kind == Bet.Kind.BANCO:
            play.calls.append(
                BancoCall(
                    coup=coup, patron_id=bet.patron_id, seat=bet.seat, order=bet.order, carried=True, at=at, by=by
                )
            )
        else:
            play.bets.append(
                Bet(
                    coup=coup,
                    patron_id=bet.patron_id,
                    seat=bet.seat,
                    standing=bet.standing,
                    kind=bet.kind,
                    amount=bet.amount,
                    order=bet.order,
                    carried_from=bet,
                    at=at,
                    by=by,
                )
            )
        carried.append({"patron": bet.patron_id, "kind": bet.kind, "amount": bet.amount})
    prepared.insert(play.calls)
    prepared.insert(play.bets)
    return carried


@service_atomic
def coup_open(*, session: TableSession, by: User) -> Coup:
    """Open a coup on the active bank: B is the bank's current amount (RULES.md §2.1)."""
    play = _Play(lock_session(session, by), by)
    with audit_batch():
        coup = _coup_open(play)
    coup.game_rows = play.game_rows()
    return coup


# --------------------------------------------------------------------------- betting


def _refuse_annulled(coup: Coup) -> None:
    if coup.state == Coup.State.ANNULLED:
        raise Conflict(
            "coup_annulled", "This coup was annulled: open the next one.", details={"coup": coup.pk}
        )


def _require_betting(coup: Coup) -> None:
    _refuse_annulled(coup)
    if coup.state != Coup.State.BETTING:
        # RULES.md §2.2, §6: only the employee closes betting; later bets are refused.
        raise Conflict(
            "bet_after_rien_ne_va_plus",
            "Betting is closed (rien ne va plus).",
            details={"coup": coup.pk, "state": coup.state},
        )


def _bettor_place(play: _Play, patron: Patron) -> Seat:
    seat = play.place(patron)
    if patron.pk == play.coup.bank.banker_id:
        raise ApplicationError("banker_cannot_bet", "The banker does not bet against his own bank.")
    return seat


def _previous_banco_loser(play: _Play) -> int | None:
    """The punta who lost a banco at the previous coup (banco suivi, RULES.md §2.2)."""
    coup = play.coup
    if play.previous is not _UNKNOWN and (play.previous is None or play.previous.state == Coup.State.SETTLED):
        # coup_open read it: the coup just before this one, settled (or annulled, below).
        prev = play.previous
        if prev is not None and prev.banco_solo and prev.winner == BANKER:
            return prev.punta_id
        return None
    # The last coup played before this one: an annulled coup was never played, so the right
    # to banco suivi passes over it to the coup that replaces it.
    prev = (
        Coup.objects.filter(session=play.session, number__lt=coup.number, state=Coup.State.SETTLED)
        .order_by("-number")
        .values("banco_solo", "winner", "punta_id")
        .first()
    )
    if prev and prev["banco_solo"] and prev["winner"] == BANKER:
        return prev["punta_id"]
    return None


def _banco_call(play: _Play, patron: Patron) -> BancoCall:
    session, coup, by = play.session, play.coup, play.by
    _require_betting(coup)
    seat = _bettor_place(play, patron)
    if patron.pk in play.barred():
        raise ApplicationError(
            "patron_barred",
            "A barred patron may not hold the cards (faux tirage).",
            details={"patron": patron.pk},
        )
    _withdraw_own(play, patron)  # chemmy-fi, after a tie: his carried bet becomes a banco
    suivi = _previous_banco_loser(play)
    refused = live.banco_refused(profile=profile_of(session), caller=patron.pk, suivi=suivi)
    if refused:
        raise ApplicationError(
            refused,
            "This profile forbids a second banco by a player who lost one.",
            details={"patron": patron.pk},
        )
    _refuse_over_carried_banco(play, patron)
    any_bets = bool(play.bets) if play.bets is not None else coup.bets.exists()
    if any_bets:
        raise Conflict("bets_already_placed", "Bets are placed: banco solo covers the whole bank alone.")
    calls = play.load_calls()
    if any(c.patron_id == patron.pk for c in calls):
        raise Conflict("banco_already_called", "This patron has called banco already.")
    order = max((c.order for c in calls), default=0) + 1
    (call,) = prepared.insert([BancoCall(coup=coup, patron=patron, seat=seat, order=order, at=now(), by=by)])
    calls.append(call)
    audit(
        session,
        by,
        "banco.called",
        call,
        {
            "coup": coup.pk,
            "patron": patron.pk,
            "seat_number": seat.seat_number,
            "standing": seat.standing,
            "order": order,
            "bank_amount": coup.bank_amount,
            "banco_suivi": suivi == patron.pk,
        },
    )
    return call


def _refuse_over_carried_banco(play: _Play, patron: Patron) -> None:
    """classic (seed 000: "in caso di pareggio, le scommesse passano al colpo successivo"): a
    banco carried from a tie stays on the table and covers the whole bank, so no other banco
    call or bet displaces it (`banco_carried`). Not where the carried bets may change
    (chemmy-fi's replay), nor when its caller was barred since (he may not hold the cards)."""
    for call in play.load_calls():
        if call.carried and call.patron_id != patron.pk and not _may_change(play, call):
            raise Conflict(
                "banco_carried",
                "A banco carried from the tie covers the whole bank: no other banco or bet this coup.",
                details={"patron": call.patron_id, "bank_amount": play.coup.bank_amount},
            )


@service_atomic
def banco_call(*, coup: Coup, by: User, patron: Patron) -> BancoCall:
    """Call banco solo (RULES.md §2.2). Several may call; rien_ne_va_plus decides the winner."""
    session, coup = lock_coup(coup, by)
    play = _Play(session, by, coup)
    with audit_batch():
        return _banco_call(play, patron)


def _bet_check(play: _Play, patron: Patron, amount: int | None, kind: str) -> tuple[Bet, dict[str, Any]]:
    """A bet's refusals, in order; the bet (not yet written, added to play.bets) and its
    audit payload when it stands."""
    coup, by = play.coup, play.by
    _require_betting(coup)
    if kind not in (Bet.Kind.INDIVIDUAL, Bet.Kind.AVEC_LA_TABLE):
        raise ApplicationError(
            "bad_kind", "A bet is individual or avec_la_table (banco: call it).", details={"kind": kind}
        )
    if kind == Bet.Kind.AVEC_LA_TABLE:
        stake = live.avec_la_table_stake(coup.bank_amount)
        if amount is None:
            amount = stake
        elif amount != stake:
            raise ApplicationError(
                "bad_amount",
                "Banco avec la table is half the bank, rounded up.",
                details={"amount": amount, "expected": stake},
            )
    if type(amount) is not int or amount <= 0:
        raise ApplicationError(
            "bad_amount", "A bet is a positive whole number of cents.", details={"amount": amount}
        )
    seat = _bettor_place(play, patron)
    changed = _withdraw_own(play, patron)  # chemmy-fi, after a tie: the bettor changes his bet
    any_calls = bool(play.calls) if play.calls is not None else coup.banco_calls.exists()
    if any_calls:
        _refuse_over_carried_banco(play, patron)
        raise Conflict("banco_called", "Banco is called: it covers the whole bank alone.")
    bets = play.load_bets()
    if kind == Bet.Kind.AVEC_LA_TABLE:
        if patron.pk in play.barred():
            raise ApplicationError(
                "patron_barred",
                "A barred patron may not hold the cards (faux tirage).",
                details={"patron": patron.pk},
            )
        if any(b.kind == Bet.Kind.AVEC_LA_TABLE for b in bets):
            raise Conflict("avec_la_table_taken", "Banco avec la table is taken for this coup.")
    covered = sum(b.amount for b in bets)
    if any(b.patron_id == patron.pk for b in bets):
        raise Conflict(
            "bet_already_placed",
            "Bets made in time cannot be changed (RULES.md §6).",
            details={"patron": patron.pk},
        )
    if covered + amount > coup.bank_amount:
        # RULES.md §2.2: the total S never exceeds B; later bettors are excluded once B is covered.
        raise ApplicationError(
            "bet_over_bank",
            "The bets would exceed the bank.",
            details={
                "amount": amount,
                "bank": coup.bank_amount,
                "covered": covered,
                "open": coup.bank_amount - covered,
            },
        )
    bet = Bet(
        coup=coup,
        patron=patron,
        seat=seat,
        standing=seat.standing,
        kind=kind,
        amount=amount,
        # A changed bet keeps its place (the punta among equal bets, who is shut out once B is
        # covered, RULES.md §2.2); a new one comes last.
        order=changed.order if isinstance(changed, Bet) else max((b.order for b in bets), default=0) + 1,
        at=now(),
        by=by,
    )
    bets.append(bet)
    return bet, {
        "coup": coup.pk,
        "patron": patron.pk,
        "kind": kind,
        "amount": amount,
        "order": bet.order,
        "seat_number": seat.seat_number,
        "standing": seat.standing,
        "at": bet.at.isoformat(),  # the row's own time (the event has its own): the books check holds it
        "covered": covered + amount,
        "open": coup.bank_amount - covered - amount,
    }


def _may_change(play: _Play, stake: Bet | BancoCall) -> bool:
    """chemmy-fi: a tie is replayed and the bettors may withdraw or change their bets (RULES.md
    §3.2, engine TieOutcome.bettors_may_change): the bets and banco calls carried to the
    replay. Everywhere else a bet made in time stands (§6), except the banco call of a
    player barred since he called: he may not hold the cards (§4), so his call cannot stand."""
    if isinstance(stake, BancoCall) and stake.patron_id in play.barred():
        return True
    carried = stake.carried if isinstance(stake, BancoCall) else stake.carried_from_id is not None
    return carried and profile_of(play.session).tie == TieRule.REPLAY


def _withdraw(play: _Play, stake: Bet | BancoCall) -> None:
    """Take a carried bet or banco call off the replay (the caller checked _may_change)."""
    call = isinstance(stake, BancoCall)
    type(stake).objects.filter(pk=stake.pk).delete()
    (play.calls if call else play.bets).remove(stake)
    audit(
        play.session,
        play.by,
        "bet.withdrawn",
        play.coup,
        {
            "coup": play.coup.pk,
            "patron": stake.patron_id,
            "kind": Bet.Kind.BANCO if call else stake.kind,
            "amount": play.coup.bank_amount if call else stake.amount,
            "carried_from": None if call else stake.carried_from_id,
        },
    )


def _withdraw_own(play: _Play, patron: Patron) -> Bet | BancoCall | None:
    """A bettor at a chemmy-fi replay who bets anew: his carried bet or banco call goes first
    (returned: a changed bet keeps its place in the betting order). Elsewhere, or at a first
    coup (nothing carried), nothing: no query."""
    if play.coup.number == 1 or profile_of(play.session).tie != TieRule.REPLAY:
        return None
    for stake in (*play.load_bets(), *play.load_calls()):
        if stake.patron_id == patron.pk and _may_change(play, stake):
            _withdraw(play, stake)
            return stake
    return None


@service_atomic
def bet_withdraw(*, coup: Coup, by: User, patron: Patron) -> Coup:
    """chemmy-fi: a bettor takes back the bet carried from a tie before the replay's rien ne
    va plus (RULES.md §3.2). Elsewhere, or for a bet made at this coup: bet_not_withdrawable."""
    session, coup = lock_coup(coup, by)
    play = _Play(session, by, coup)
    with audit_batch():
        _require_betting(coup)
        mine = next((s for s in (*play.load_bets(), *play.load_calls()) if s.patron_id == patron.pk), None)
        if mine is None:
            raise ApplicationError("no_bet", "This patron has no bet on this coup.", details={"patron": patron.pk})
        if not _may_change(play, mine):
            raise Conflict(
                "bet_not_withdrawable",
                "Bets made in time cannot be changed (RULES.md §6); only a bet carried to a "
                "chemmy-fi replay may be.",
                details={"patron": patron.pk},
            )
        _withdraw(play, mine)
    coup.game_rows = play.game_rows()
    return coup


def _bets_place(play: _Play, bets: list[dict[str, Any]]) -> list[Bet]:
    """Bets in betting order: each checked as bet_place does (after the ones before it),
    then all written in one INSERT and their events recorded in order."""
    play.preload_places(bet["patron"].pk for bet in bets)
    placed = [
        _bet_check(play, bet["patron"], bet.get("amount"), bet.get("kind", Bet.Kind.INDIVIDUAL))
        for bet in bets
    ]
    prepared.insert([bet for bet, _ in placed])
    for bet, payload in placed:
        audit(play.session, play.by, "bet.placed", bet, payload)
    return [bet for bet, _ in placed]


@service_atomic
def bet_place(
    *, coup: Coup, by: User, patron: Patron, amount: int | None = None, kind: str = "individual"
) -> Bet:
    """A bet before rien ne va plus (RULES.md §2.2): individual, or banco avec la table
    (half the bank, rounded up to the cent; `amount` may then be omitted)."""
    session, coup = lock_coup(coup, by)
    play = _Play(session, by, coup)
    with audit_batch():
        (bet,) = _bets_place(play, [{"patron": patron, "amount": amount, "kind": kind}])
    return bet


def _calls(rows, barred: set[int]) -> list[live.Call]:
    return [
        live.Call(
            key=r.pk,
            seat_number=r.seat.seat_number,
            order=r.order,
            amount=getattr(r, "amount", 0),
            kind=getattr(r, "kind", Bet.Kind.BANCO),
            barred=r.patron_id in barred,
        )
        for r in rows
    ]


def _rien_ne_va_plus(play: _Play) -> Coup:
    session, coup, by = play.session, play.coup, play.by
    _refuse_annulled(coup)
    if coup.state != Coup.State.BETTING:
        raise Conflict("coup_not_betting", "Betting is closed already.", details={"state": coup.state})
    profile = profile_of(session)
    barred = play.barred()
    calls = play.load_calls()
    banco = None
    if calls:
        suivi = _previous_banco_loser(play)
        winner = live.banco_winner(
            _calls(calls, barred),
            profile=profile,
            banker_seat=coup.bank.seat.seat_number,
            table_seats=session.table.seats,
            suivi=next((c.pk for c in calls if c.patron_id == suivi), None),
        )
        if winner is None:
            raise ApplicationError(
                "no_eligible_punta",
                "Every banco caller is barred from holding the cards: take their calls back.",
                details={"barred_callers": [c.patron_id for c in calls]},
            )
        banco = next(c for c in calls if c.pk == winner.key)
        BancoCall.objects.filter(coup=coup).update(
            won=Case(When(pk=banco.pk, then=Value(True)), default=Value(False))
        )
        for c in calls:
            c.won = c.pk == banco.pk
        bet = Bet.objects.create(
            coup=coup,
            patron_id=banco.patron_id,
            seat=banco.seat,
            standing=banco.seat.standing,
            kind=Bet.Kind.BANCO,
            amount=coup.bank_amount,
            order=1,
            at=now(),
            by=by,
        )
        if play.bets is not None:
            play.bets.append(bet)
    bets = play.load_bets()
    covered = sum(b.amount for b in bets)
    if covered <= 0:
        raise ApplicationError("no_bets", "No bet covers any of the bank.")
    chosen = live.choose_punta(
        _calls(bets, barred), banker_seat=coup.bank.seat.seat_number, table_seats=session.table.seats
    )
    if chosen is None:
        raise ApplicationError("no_eligible_punta", "Every bettor is barred from holding the cards.")
    punta = next(b for b in bets if b.pk == chosen.key)
    regola = {}
    if profile.regola_allowed:
        regola = {
            m.patron_id: m.declared
            for m in play.marks()
            if m.patron_id in (punta.patron_id, coup.bank.banker_id)
        }
    coup.covered, coup.banco_solo = covered, banco is not None
    coup.punta_id, coup.punta_seat_id = punta.patron_id, punta.seat_id
    coup.regola_punta = bool(regola.get(punta.patron_id)) and profile.punta_regola is not None
    coup.regola_banker = bool(regola.get(coup.bank.banker_id)) and profile.banker_regola is not None
    coup.state, coup.closed_at = Coup.State.CLOSED, now()
    play.save(
        [
            "covered",
            "banco_solo",
            "punta",
            "punta_seat",
            "regola_punta",
            "regola_banker",
            "state",
            "closed_at",
        ]
    )
    audit(
        session,
        by,
        "coup.rien_ne_va_plus",
        coup,
        {
            "number": coup.number,
            "bank_amount": coup.bank_amount,
            "covered": covered,
            "uncovered": coup.bank_amount - covered,
            "banco_solo": coup.banco_solo,
            "banco_calls": [c.patron_id for c in calls],
            "punta": punta.patron_id,
            "punta_kind": punta.kind,
            "regola_punta": coup.regola_punta,
            "regola_banker": coup.regola_banker,
            "bets": [{"patron": b.patron_id, "kind": b.kind, "amount": b.amount} for b in bets],
        },
    )
    return coup


@service_atomic
def rien_ne_va_plus(*, coup: Coup, by: User) -> Coup:
    """Close betting; pick the punta (RULES.md §2.2); snapshot the Regola marks (§3.2)."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _rien_ne_va_plus)


# --------------------------------------------------------------------------- the cards


def _step(coup: Coup) -> live.Step:
    return live.next_step(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)


def _require_dealing(coup: Coup) -> None:
    _refuse_annulled(coup)
    if coup.state == Coup.State.BETTING:
        raise Conflict("betting_open", "Close betting (rien ne va plus) before the cards.")
    if coup.state == Coup.State.PENDING:
        raise Conflict(
            "coup_pending", "The coup is complete; its reconstruction waits.", details={"needs": coup.needs}
        )


def _check_expected(entered: list[str], expect_cards: int | None) -> None:
    """A tablet says how many cards it saw (the page it entered the card on): a card sent
    from an older page (a second tablet, a tab left open) is refused rather than dealt to the
    hand that comes next now, which is not the one its croupier saw."""
    if expect_cards is not None and expect_cards != len(entered):
        raise Conflict(
            "coup_moved_on",
            "The coup has moved on since this page was shown: check its cards, then enter the next one.",
            details={"expected_cards": expect_cards, "cards": len(entered)},
        )


def _card_deal(play: _Play, card: object, expect_cards: int | None = None) -> Coup:
    coup = play.coup
    _require_dealing(coup)
    _check_expected(coup.cards, expect_cards)
    _deal(play, card)
    return coup


def _deal(play: _Play, card: object, *, misread: ShoeCard | None = None) -> None:
    """One card into the coup as it stands (its cards, the declarations), the engine saying
    whose hand it goes to and what comes next: the card out of the shoe, or (`misread`: the
    coup's last card, taken back by _card_entry_correct) the same shoe card read anew. Dealing
    and correcting go through this one step, so a corrected coup is the coup as if dealt right."""
    session, coup, by = play.session, play.coup, play.by
    with engine_errors():
        code, side, banker_draws = live.deal(
            coup.cards, card, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws
        )
    if misread is None:
        shoe_card = play.shoe().draw(
            session=session, by=by, card=code, use=ShoeCard.Use.DEALT, coup=coup, side=side
        )
    else:
        was = misread.code
        shoe_card = play.shoe().correct(misread, code)
    coup.cards = [*coup.cards, shoe_card.code]
    coup.dealt_side = side  # (not stored: the hand this card went to, for the caller's answer)
    coup.banker_draws = banker_draws
    coup.state = Coup.State.DEALING
    play.save(["cards", "banker_draws", "state"])
    step = _step(coup)
    facts = {
        "hands": live.hands(coup.cards, punta_draws=coup.punta_draws).as_dict(),
        "next": step.as_dict(),
    }
    if misread is None:
        audit(session, by, "card.dealt", coup,
              {"coup": coup.pk, "card": shoe_card.code, "position": shoe_card.position, "side": side, **facts})  # fmt: skip
    else:
        audit(session, by, "card.entry_corrected", coup,
              {"coup": coup.pk, "shoe": shoe_card.shoe_id, "position": shoe_card.position, "side": side,
               "was": was, "card": shoe_card.code, **facts})  # fmt: skip
    if step.need == live.COMPLETE:
        _complete(play)


@service_atomic
def card_deal(*, coup: Coup, by: User, card: str, expect_cards: int | None = None) -> Coup:
    """One card as it leaves the shoe; the engine says whose hand it goes to (§2.3-2.7).
    When the banker's turn comes, a card entered is his third card: it is his decision to draw.
    `expect_cards`: the cards the tablet had seen dealt (`coup_moved_on` if others were since)."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _card_deal, card, expect_cards)


def _card_entry_correct(play: _Play, was: object, card: object) -> Coup:
    """The coup's last card, entered wrongly (the tablet's tap, not the card): taken back and
    dealt again as `card` at the same shoe position (see card_entry_correct)."""
    coup = play.coup
    _refuse_annulled(coup)
    if coup.state == Coup.State.SETTLED:
        raise Conflict(
            "coup_settled",
            "The coup is settled: its cards are no longer corrected (the Direzione decides a dispute).",
            details={"coup": coup.pk},
        )
    last = coup.cards[-1] if coup.cards else None
    with contextlib.suppress(EngineError):  # not a card: not the last one either
        was = parse_card(was)
    if last is None or was != last:
        raise Conflict(
            "card_not_last",
            "Only the coup's last card may be corrected, named as it was entered.",
            details={"coup": coup.pk, "last": last, "was": str(was)},
        )
    if coup.next_cards or coup.reconstruction:
        raise Conflict(
            "card_not_latest",
            "The reconstruction has moved on since this card: it is no longer corrected.",
            details={"coup": coup.pk, "card": last, "step": "reconstruction"},
        )
    try:
        before, banker_draws = live.undeal(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    except EngineError as exc:
        # A declaration or decision recorded after the card was made on it as entered.
        raise Conflict(
            "card_not_latest", exc.message[:1].upper() + exc.message[1:] + ": it is no longer corrected.",
            details={"coup": coup.pk, "card": last, **exc.details},
        ) from None  # fmt: skip
    with engine_errors():
        code = parse_card(card)
    if code == last:
        raise ApplicationError("card_unchanged", "The right card is the one entered.", details={"card": code})
    misread = coup.shoe_cards.filter(use=ShoeCard.Use.DEALT).order_by("-position").first()
    if misread is None or misread.code != last:  # the rows are as the coup says; never reached
        raise Conflict("card_not_last", "The shoe does not hold this card as the coup's last.",
                       details={"coup": coup.pk, "last": last})  # fmt: skip
    coup.cards, coup.banker_draws = before, banker_draws
    _deal(play, code, misread=misread)
    return coup


@service_atomic
def card_entry_correct(*, coup: Coup, by: User, was: str, card: str) -> Coup:
    """The coup's last card was entered wrongly (7D tapped for 7H): the same card out of the
    shoe, at the same position, recorded as `card`, and the coup goes on as if it had been
    entered right: the engine's next step, through card_deal's own step (_deal), so a coup the
    card completes is resolved again on it, settled or its reconstruction pending, exactly as
    card_deal would. (Under the rules no correction completes a coup still dealing: the punta's
    natural is cards 1 and 3, and the banker's shows only after the punta's declaration, which
    ends the correction of the fourth card.) Only the session's Capo Partita, only the last card (`was`: 409 `card_not_last`
    otherwise), while it is the coup's latest step (409 `card_not_latest` once a declaration,
    decision or reconstruction step followed it), never in a settled coup (409 `coup_settled`)
    or an annulled one. `card`: the dealing checks (`bad_card`, `card_exhausted`, ...), and
    not `was` (400 `card_unchanged`). Event `card.entry_corrected`."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _card_entry_correct, was, card)


def _punta_declare(play: _Play, draws: bool) -> Coup:
    session, coup, by = play.session, play.coup, play.by
    _require_dealing(coup)
    if type(draws) is not bool:
        raise ApplicationError("bad_decision", "draws is true (carte) or false (non).")
    with engine_errors():
        live.declare(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    hint = _hint(session, coup)
    coup.punta_draws = draws
    play.save(["punta_draws"])
    step = _step(coup)
    audit(
        session,
        by,
        "punta.declared",
        coup,
        {
            "coup": coup.pk,
            "draws": draws,
            "rule": hint,
            "next": step.as_dict(),
        },
    )
    if step.need == live.COMPLETE:  # the banker's natural: the card asked for is not given (§2.6)
        _complete(play)
    return coup


@service_atomic
def punta_declare(*, coup: Coup, by: User, draws: bool) -> Coup:
    """The punta's "carte" (draws=True) or "non" after the four cards, without a natural (§2.5)."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _punta_declare, draws)


def _banker_decide(play: _Play, draws: bool) -> Coup:
    session, coup, by = play.session, play.coup, play.by
    _require_dealing(coup)
    if type(draws) is not bool:
        raise ApplicationError("bad_decision", "draws is true or false.")
    with engine_errors():
        live.decide(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    hint = _hint(session, coup)
    coup.banker_draws = draws
    play.save(["banker_draws"])
    step = _step(coup)
    audit(
        session,
        by,
        "banker.decided",
        coup,
        {
            "coup": coup.pk,
            "draws": draws,
            "rule": hint,
            "next": step.as_dict(),
        },
    )
    if step.need == live.COMPLETE:
        _complete(play)
    return coup


@service_atomic
def banker_decide(*, coup: Coup, by: User, draws: bool) -> Coup:
    """The banker draws or stands after the punta's part (§2.7). Standing closes the coup;
    drawing waits for his card (entering the card directly means the same)."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _banker_decide, draws)


def _hint(session: TableSession, coup: Coup) -> dict[str, Any] | None:
    with engine_errors():
        hint = live.decision_hint(
            profile_of(session),
            coup.cards,
            punta_draws=coup.punta_draws,
            banker_draws=coup.banker_draws,
            regola_punta=coup.regola_punta,
            regola_banker=coup.regola_banker,
            banco_solo=coup.banco_solo,
        )
    return None if hint is None else {k: (None if v is None else str(v)) for k, v in hint._asdict().items()}


# --------------------------------------------------------------------------- resolution


def _resolve(session: TableSession, coup: Coup):
    rec = coup.reconstruction or {}
    with engine_errors():
        return resolve(
            coup.cards,
            profile_of(session),
            punta_draws=coup.punta_draws,
            regola_punta=coup.regola_punta,
            regola_banker=coup.regola_banker,
            banco_solo=coup.banco_solo,
            next_cards=coup.next_cards,
            reconstruction_punta_draws=rec.get("punta_draws"),
            reconstruction_banker_draws=rec.get("banker_draws"),
        )


def _complete(play: _Play, *, first: bool = True) -> None:
    """The coup as played is complete, or a reconstruction step was entered: the engine
    resolves it (RULES.md §3.3); pending waits for the tablet, final settles at once."""
    session, coup, by = play.session, play.coup, play.by
    res = _resolve(session, coup)
    settled = res.settled
    fields = ["settled", "needs", "state"]
    if first:
        coup.as_played = res.as_played.as_dict()
        coup.conforming = res.conforming
        coup.violations = [v._asdict() for v in res.violations]
        fields += ["as_played", "conforming", "violations"]
    coup.settled = settled.as_dict()
    if settled.status == PENDING:
        coup.state, coup.needs = Coup.State.PENDING, dict(settled.needs)
        play.save(fields)
        if first:
            audit(session, by, "coup.played", coup, _played_payload(coup))
        audit(
            session,
            by,
            "coup.pending",
            coup,
            {
                "coup": coup.pk,
                "needs": coup.needs,
                "next_cards": coup.next_cards,
                "reconstruction": coup.reconstruction,
            },
        )
        return
    coup.needs = None
    play.save(fields)
    if first:
        audit(session, by, "coup.played", coup, _played_payload(coup))
    if settled.void_cards:
        # Drawn in the real coup, unused by the reconstruction: void, to the sibilla (§3.3).
        shoe = play.shoe()
        shoe.flush()  # the coup's cards, as written, in shoe order
        dealt = list(coup.shoe_cards.filter(use=ShoeCard.Use.DEALT).order_by("position"))
        shoe.void_drawn(dealt[-len(settled.void_cards) :], reason="unused by the reconstruction")
    # The settlement writes rows itself: the shoe's cards and state go first in its round trip;
    # the coup's deferred columns go into its own UPDATE of the coup (one, not two).
    bets = play.load_bets()
    writes = play._shoe.take_writes() if play._shoe is not None else []
    settle_coup(session=session, coup=coup, by=by, winner=settled.coup.winner, bets=bets,
                coup_fields=play.take_dirty(), seats=play._seats, barred=play.barred(),
                writes=writes)  # fmt: skip


def _played_payload(coup: Coup) -> dict[str, Any]:
    return {
        "coup": coup.pk,
        "cards": coup.cards,
        "punta_draws": coup.punta_draws,
        "banker_draws": coup.banker_draws,
        "regola_punta": coup.regola_punta,
        "regola_banker": coup.regola_banker,
        "banco_solo": coup.banco_solo,
        "as_played": coup.as_played,
        "conforming": coup.conforming,
        "violations": coup.violations,
        "settled": coup.settled,
    }


def _require_pending(coup: Coup) -> dict[str, Any]:
    _refuse_annulled(coup)
    if coup.state != Coup.State.PENDING:
        raise Conflict(
            "reconstruction_not_pending",
            "This coup has no pending reconstruction.",
            details={"state": coup.state},
        )
    return coup.needs or {}


def _reconstruction_card(play: _Play, card: object, expect_cards: int | None = None) -> Coup:
    session, coup, by = play.session, play.coup, play.by
    needs = _require_pending(coup)
    if "cards" not in needs:
        raise ApplicationError(
            "decision_required", "The reconstruction needs a decision first.", details=needs
        )
    _check_expected(coup.next_cards, expect_cards)
    shoe_card = play.shoe().draw(
        session=session, by=by, card=card, use=ShoeCard.Use.RECONSTRUCTION, coup=coup
    )
    coup.next_cards = [*coup.next_cards, shoe_card.code]
    play.save(["next_cards"])
    audit(
        session,
        by,
        "reconstruction.card",
        coup,
        {"coup": coup.pk, "card": shoe_card.code, "position": shoe_card.position},
    )
    _complete(play, first=False)
    return coup


@service_atomic
def reconstruction_card(*, coup: Coup, by: User, card: str, expect_cards: int | None = None) -> Coup:
    """The next shoe card for a pending reconstruction (§3.3): shoe-checked and recorded.
    `expect_cards`: the reconstruction cards the tablet had seen (`coup_moved_on` otherwise)."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _reconstruction_card, card, expect_cards)


def _reconstruction_decide(play: _Play, side: str, draws: bool) -> Coup:
    session, coup, by = play.session, play.coup, play.by
    needs = _require_pending(coup)
    if side not in (PUNTA, BANKER):
        raise ApplicationError("bad_side", "side is punta or banker.", details={"side": side})
    if type(draws) is not bool:
        raise ApplicationError("bad_decision", "draws is true or false.")
    if needs.get("decision") != side:
        code = "card_required" if "cards" in needs else "decision_not_expected"
        raise ApplicationError(code, "The reconstruction does not wait for this decision.", details=needs)
    coup.reconstruction = {**coup.reconstruction, f"{side}_draws": draws}
    play.save(["reconstruction"])
    audit(session, by, "reconstruction.decided", coup, {"coup": coup.pk, "side": side, "draws": draws})
    _complete(play, first=False)
    return coup


@service_atomic
def reconstruction_decide(*, coup: Coup, by: User, side: str, draws: bool) -> Coup:
    """A decision for a free cell the real coup never reached (§3.3)."""
    session, coup = lock_coup(coup, by)
    return _played(session, coup, by, _reconstruction_decide, side, draws)


# --------------------------------------------------------------------------- annulling


# Before the first card the Capo Partita annuls (a dispute, a dropped shoe); once the cards
# have started, only the Commissario di Gioco, the floor's supervisor, or the Direzione
# (RULES.md §6): the recovery of a coup that cannot be played to its end (its settlement refused by the books,
# a tablet lost mid-coup, a card the shoe cannot take).
_BEFORE_THE_CARDS = (Coup.State.BETTING, Coup.State.CLOSED)
# Once they have started: the floor's supervisor, or the Direzione Giochi, to whom disputes go
# and whose decision is final (RULES.md §6; seed 001).
ANNULS_STARTED = (Role.COMMISSARIO, Role.DIREZIONE)
_CARDS_STARTED = (Coup.State.DEALING, Coup.State.PENDING)


def _check_annuller(session: TableSession, coup: Coup, by: User) -> None:
    """Who may annul this coup, in its state (the locks held): refusals in the order the
    tablet can act on them (a settled coup is no one's to annul)."""
    if coup.state in _BEFORE_THE_CARDS:
        check_actor(session, by)
        return
    if coup.state not in _CARDS_STARTED:
        raise Conflict(
            "coup_not_annullable",
            "A settled coup cannot be annulled.",
            details={"coup": coup.pk, "state": coup.state},
        )
    if by is None or not has_role(by, *ANNULS_STARTED):
        raise NotAllowed(
            "not_commissario",
            "Once its cards have started, only the Commissario di Gioco or the Direzione Giochi may annul "
            "a coup.",
            details={"coup": coup.pk, "state": coup.state},
        )


@service_atomic
def coup_annul(*, coup: Coup, by: User, reason: str) -> Coup:
    """Annul a coup that is not settled: the bets go back to the players and no money moves
    (no posting, no cagnotte); the bank is as it was and the next coup may open. The coup
    keeps its number, its bets and calls, with the reason, for the record. Allowed while play
    is interrupted (RULES.md §6: management may suspend play), so that the session can then
    be closed.

    Before its first card: the table's Capo Partita. Once its cards have started (dealing, or
    a reconstruction pending): only a Commissario or the Direzione (`not_commissario`
    otherwise), for a coup that cannot be played to its end or a dispute the Direzione
    decides. Its cards stay as entered, out of the shoe (a card drawn never goes back,
    RULES.md §1), and the event names them."""
    session, locked = lock_coup(coup, by, play=False, any_actor=True)
    _refuse_annulled(locked)
    _check_annuller(session, locked, by)
    reason = clean_text(reason, Coup, "annul_reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the coup is annulled.")
    play = _Play(session, by, locked)
    with audit_batch():
        bets, calls = play.load_bets(), play.load_calls()
        was = locked.state
        locked.state, locked.annulled_at, locked.annulled_by, locked.annul_reason = (
            Coup.State.ANNULLED, now(), by, reason
        )
        at = locked.annulled_at
        prepared.update(locked, ["state", "annulled_at", "annulled_by", "annul_reason"])
        audit(
            session,
            by,
            "coup.annulled",
            locked,
            {
                "coup": locked.pk,
                "number": locked.number,
                "bank": locked.bank_id,
                "bank_amount": locked.bank_amount,
                "was": was,
                "reason": reason,
                "at": at.isoformat(),
                "bets_returned": [{"patron": b.patron_id, "kind": b.kind, "amount": b.amount} for b in bets],
                "banco_calls": [c.patron_id for c in calls],
                # The cards out of the shoe for this coup, in shoe order: they stay out.
                "cards": list(locked.cards),
                "next_cards": list(locked.next_cards),
            },
        )
    locked.game_rows = play.game_rows()
    return locked


# --------------------------------------------------------------------------- one shot


@service_atomic
def coup_record(
    *,
    session: TableSession,
    by: User,
    cards: list[str],
    bets: list[dict[str, Any]] | None = None,
    banco: Patron | list[Patron] | None = None,
    punta_draws: bool | None = None,
    banker_draws: bool | None = None,
    next_cards: list[str] | None = None,
    reconstruction: dict[str, bool] | None = None,
) -> Coup:
    """A whole coup in one transaction, through the same steps as the tablet: open, banco
    calls (in order) or bets ({"patron", "amount", "kind"} in betting order), rien ne va
    plus, the cards in shoe order with the declarations, then the reconstruction's next
    cards and decisions. Any refusal rolls everything back. banker_draws may be omitted:
    the cards say whether he drew. A reconstruction that still waits leaves the coup pending."""
    play = _Play(lock_session(session, by), by)
    with audit_batch():
        coup = _coup_open(play)
        callers = [] if banco is None else banco if isinstance(banco, list | tuple) else [banco]
        play.preload_places([p.pk for p in callers] + [bet["patron"].pk for bet in bets or ()])
        for patron in callers:
            _banco_call(play, patron)
        if bets:
            _bets_place(play, list(bets))
        _rien_ne_va_plus(play)
        pending = list(cards)
        while coup.state not in (Coup.State.PENDING, Coup.State.SETTLED):
            step = _step(coup)
            if step.need == live.PUNTA_DECLARATION:
                if punta_draws is None:
                    raise ApplicationError("declaration_required", "The punta's declaration is missing.")
                _punta_declare(play, punta_draws)
            elif step.need == live.BANKER_DECISION and (
                banker_draws is False or (not pending and banker_draws is None)
            ):
                _banker_decide(play, False)
            elif not pending:
                raise ApplicationError(
                    "cards_missing", "The coup needs more cards.", details={"need": step.as_dict()}
                )
            else:
                _card_deal(play, pending.pop(0))
        if pending:
            # More cards than the coup as played takes: the engine's refusal (too_many_cards,
            # card_after_natural), settled or waiting for its reconstruction, whose shoe cards
            # go in next_cards.
            with engine_errors():
                live.deal(coup.cards, pending[0], punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
            raise ApplicationError(  # the engine refuses a card to a complete coup; never reached
                "too_many_cards", "The coup is complete: no side takes another card.", details={"unused": pending}
            )
        extra = list(next_cards or ())
        rec = dict(reconstruction or {})
        while coup.state == Coup.State.PENDING:
            needs = coup.needs or {}
            if "cards" in needs and extra:
                _reconstruction_card(play, extra.pop(0))
            elif needs.get("decision") and f"{needs['decision']}_draws" in rec:
                _reconstruction_decide(play, needs["decision"], rec.pop(f"{needs['decision']}_draws"))
            else:
                break
        if extra:
            raise ApplicationError(
                "unused_next_cards", "The coup does not need these shoe cards.", details={"unused": extra}
            )
        if rec:
            # As with the cards: a decision the reconstruction never asked for is an error of
            # entry (the wrong coup, the wrong side), not something to drop silently.
            raise ApplicationError(
                "unused_reconstruction",
                "The reconstruction does not wait for these decisions.",
                details={"unused": sorted(rec)},
            )
        play.flush()
    coup.game_rows = play.game_rows()
    return coup


__all__ = [
    "banco_call",
    "banker_decide",
    "bet_place",
    "bet_withdraw",
    "card_deal",
    "card_entry_correct",
    "coup_annul",
    "coup_open",
    "coup_record",
    "punta_declare",
    "reconstruction_card",
    "reconstruction_decide",
    "rien_ne_va_plus",
]
