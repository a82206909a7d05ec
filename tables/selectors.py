"""Reading the game at a table. session_game_state is everything the tablet needs, in a
constant number of queries whatever the number of bettors, coups or seats."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import (
    BigIntegerField,
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.utils import timezone

from audit.services import books_signed_days, books_signed_register
from config import prepared
from config.prepared import Prepared
from floor.models import Casino, GamingDay, Patron, Seat, StaffChange, TableSession
from floor.selectors import seats_taken_subquery
from tables.engine import EngineError, get_profile, live
from tables.engine import Shoe as EngineShoe
from tables.engine import succession as succession_rules

from .models import (
    COUP_FINISHED,
    Auction,
    BancoCall,
    Bank,
    Bet,
    Bid,
    CashCount,
    CashExchange,
    Coup,
    FauxTirageBar,
    FirstBankPass,
    Posting,
    RegolaMark,
    Shoe,
    Succession,
    SuccessionOffer,
)


def coup_list(*, session: TableSession) -> QuerySet[Coup]:
    return (
        Coup.objects.filter(session=session)
        .select_related("bank", "bank__banker", "punta", "shoe")
        .prefetch_related("bets__patron", "postings")
        .order_by("number")
    )


def bank_list(*, session: TableSession) -> QuerySet[Bank]:
    return Bank.objects.filter(session=session).select_related("banker", "seat").order_by("number")


def patron_balance(*, session: TableSession, patron: Patron) -> int:
    """A patron's running balance at the session: the sum of his postings, cents."""
    return Posting.objects.filter(session=session, patron=patron).aggregate(s=Sum("amount"))["s"] or 0


def session_balances(*, session: TableSession) -> dict[int | None, int]:
    """patron id -> balance; the key None is the house (the cagnotte)."""
    rows = Posting.objects.filter(session=session).values("patron_id").annotate(total=Sum("amount"))
    return {r["patron_id"]: r["total"] for r in rows}


def house_cagnotte(*, session: TableSession) -> int:
    return (
        Posting.objects.filter(session=session, role=Posting.Role.HOUSE).aggregate(s=Sum("amount"))["s"] or 0
    )


# The game state's reads, compiled once per connection (config.prepared): every write's
# answer and every tablet refresh makes them. The services read the same rows with these.
SESSION = Prepared(lambda pk: TableSession.objects.select_related("table").filter(pk=pk))
LAST_BANK = Prepared(
    lambda session_id: Bank.objects.filter(session_id=session_id)
    .select_related("banker", "seat")
    .order_by("-number")[:1]
)
ACTIVE_SHOE = Prepared(
    lambda session_id: Shoe.objects.filter(session_id=session_id, finished_at__isnull=True).order_by("pk")[:1]
)
LAST_COUP = Prepared(
    lambda session_id: Coup.objects.filter(session_id=session_id).select_related("punta").order_by("-number")[:1]
)
def _in_order(model, coup_id) -> QuerySet:
    """A coup's bets or banco calls in order, their patrons and places loaded."""
    return model.objects.filter(coup_id=coup_id).select_related("patron", "seat").order_by("order")


def _last_coup_id(session_id: int) -> Subquery:
    return Subquery(Coup.objects.filter(session_id=session_id).order_by("-number").values("pk")[:1])


COUP_BETS = Prepared(lambda coup_id: _in_order(Bet, coup_id))
COUP_CALLS = Prepared(lambda coup_id: _in_order(BancoCall, coup_id))
# The session's last coup's bets and banco calls, read with the coup itself (prepared.read).
LAST_COUP_BETS = Prepared(lambda session_id: _in_order(Bet, _last_coup_id(session_id)))
LAST_COUP_CALLS = Prepared(lambda session_id: _in_order(BancoCall, _last_coup_id(session_id)))
SEATS = Prepared(
    lambda session_id: Seat.objects.filter(session_id=session_id, left_at__isnull=True).select_related("patron")
)
MARKS = Prepared(lambda session_id: RegolaMark.objects.filter(session_id=session_id).select_related("patron"))
BARS = Prepared(lambda session_id: FauxTirageBar.objects.filter(session_id=session_id).select_related("patron"))
_LAST_SUCCESSION = Prepared(
    lambda session_id: Succession.objects.filter(session_id=session_id)
    .select_related("outgoing_banker", "auction", "auction__winning_bid")
    .order_by("-number")[:1]
)
_OFFERS = Prepared(
    lambda succession_id: SuccessionOffer.objects.filter(succession_id=succession_id)
    .select_related("patron", "seat")
    .order_by("order")
)
_BIDS = Prepared(lambda auction_id: Bid.objects.filter(auction_id=auction_id).select_related("patron").order_by("seq"))
# Each patron's running balance at the session (the house's under None): the postings summed
# first, the names apart (joined before the sum, PostgreSQL hashed every patron of the casino).
_BALANCES = Prepared(
    lambda session_id: Posting.objects.filter(session_id=session_id)
    .values("patron_id")
    .annotate(total=Sum("amount"))
    .order_by("patron_id")
)
# The names of the session's players: a patron with postings held a place at it (a bet or a
# bank needs one), and a place's row stays when he leaves.
_PLAYER_NAMES = Prepared(
    lambda session_id: Seat.objects.filter(session_id=session_id).values(
        "patron_id", "patron__first_name", "patron__last_name"
    )
)


def _balance_names(balances: list[dict[str, Any]], players: list[dict[str, Any]]) -> dict[int, str]:
    names = {r["patron_id"]: f"{r['patron__first_name']} {r['patron__last_name']}" for r in players}
    missing = [r["patron_id"] for r in balances if r["patron_id"] is not None and r["patron_id"] not in names]
    if missing:  # a posting without a place at the table: not expected, read rather than fail
        names.update({p.pk: p.full_name for p in Patron.objects.filter(pk__in=missing)})
    return names


def _name(patron: Patron | None) -> dict[str, Any] | None:
    return None if patron is None else {"id": patron.pk, "name": patron.full_name}


def _shoe_state(shoe: Shoe | None, state: EngineShoe | None = None) -> dict[str, Any] | None:
    if shoe is None:
        return None
    try:
        state = state if state is not None else EngineShoe.from_dict(shoe.state)
    except EngineError:  # never expected: the services only store states the engine made
        return {"id": shoe.pk, "seq": shoe.seq, "number": shoe.number, "error": "bad_state"}
    return {
        "id": shoe.pk,
        "seq": shoe.seq,
        "number": shoe.number,
        "decks": shoe.decks,
        "cards_out": len(state.drawn),
        "cards_left": state.cards_left,
        "dealable": state.dealable,
        "voided": len(state.voided),
        "stop_at": state.stop_at,
        "stop_card_reached": shoe.stop_card_reached_at is not None,
    }


def _coup_state(coup: Coup, profile, bets: list[Bet], calls: list[BancoCall]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": coup.pk,
        "number": coup.number,
        "state": coup.state,
        "bank_amount": coup.bank_amount,
        "covered": sum(b.amount for b in bets),
        "banco_solo": coup.banco_solo,
        "punta": _name(coup.punta),
        "regola_punta": coup.regola_punta,
        "regola_banker": coup.regola_banker,
        "bets": [
            {
                "id": b.pk,
                "patron": _name(b.patron),
                "kind": b.kind,
                "amount": b.amount,
                "order": b.order,
                "seat_number": b.seat.seat_number,
                "standing": b.standing,
                "carried": b.carried_from_id is not None,
            }
            for b in bets
        ],
        "banco_calls": [
            {"patron": _name(c.patron), "order": c.order, "seat_number": c.seat.seat_number, "won": c.won,
             "carried": c.carried}
            for c in calls
        ],
        "cards": list(coup.cards),
        "punta_draws": coup.punta_draws,
        "banker_draws": coup.banker_draws,
        "needs": coup.needs,
        "as_played": coup.as_played,
        "conforming": coup.conforming,
        "violations": coup.violations,
        "settled": coup.settled,
        "next_cards": coup.next_cards,
        "winner": coup.winner or None,
        "cagnotte": coup.cagnotte,
        "annul_reason": coup.annul_reason or None,
    }
    out["open"] = coup.bank_amount - out["covered"]
    if coup.state == Coup.State.ANNULLED:  # never settled: its bets went back, its cards (if any) are listed
        out["next"] = out["hands"] = out["rule"] = None
        return out
    if coup.state == Coup.State.BETTING:
        out["next"] = {"need": "bets", "side": None, "natural": False}
        out["hands"] = None
        out["rule"] = None
        return out
    step = live.next_step(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    out["hands"] = live.hands(coup.cards, punta_draws=coup.punta_draws).as_dict()
    if coup.state == Coup.State.PENDING:
        out["next"] = {"need": "reconstruction", "side": None, "natural": False, "needs": coup.needs}
    elif coup.state == Coup.State.SETTLED:
        out["next"] = None
    else:
        out["next"] = step.as_dict()
    hint = (
        live.decision_hint(
            profile,
            coup.cards,
            punta_draws=coup.punta_draws,
            banker_draws=coup.banker_draws,
            regola_punta=coup.regola_punta,
            regola_banker=coup.regola_banker,
            banco_solo=coup.banco_solo,
        )
        if coup.state in (Coup.State.CLOSED, Coup.State.DEALING)
        else None
    )
    out["rule"] = (
        None if hint is None else {k: (None if v is None else str(v)) for k, v in hint._asdict().items()}
    )
    return out


NOT_READ = object()


@dataclass
class GameRows:
    """Rows a write already holds, in their state after the write, so that the answer's game
    state need not read them again (the coup services hand them over: `Coup.game_rows`).
    Every field is optional: what is missing is read as session_game_state reads it.

    `coup` with `bets` and `calls` is the session's last coup and its bets and banco calls in
    order, their seats loaded; `last_bank` the session's last bank (the coup's); `shoe` the
    active shoe with `shoe_state` its parsed state; `seats` the active places; `marks` and
    `bars` all of the session's."""

    session: TableSession
    last_bank: Bank | None = None
    shoe: Shoe | None = None
    shoe_state: EngineShoe | None = None
    coup: Coup | None = None
    bets: list[Bet] | None = None
    calls: list[BancoCall] | None = None
    seats: list[Seat] | None = None
    marks: list[RegolaMark] | None = None
    bars: list[FauxTirageBar] | None = None
    # The session's latest succession as the write left it (with its offers, their patrons
    # and seats, and no auction), when the write started it; NOT_READ: read it.
    succession: Any = None
    # Before the session's first bank: the first bank's declines (FirstBankPass), when the
    # caller read them (session_game_states, for all its sessions at once); None: read them.
    first_bank_passes: list[Any] | None = None

    def __post_init__(self):
        if self.succession is None:
            self.succession = NOT_READ


def _local(moment: datetime | None) -> str | None:
    """A time as the rest of the API gives it (DRF's DateTimeField): ISO 8601 in the
    casino's time zone, not the database's UTC."""
    return None if moment is None else timezone.localtime(moment).isoformat()


def _with_patrons(*groups: list[Any]) -> None:
    """Attach the patron of every row whose patron is not loaded yet: one query, or none."""
    missing = {row.patron_id for rows in groups for row in rows if not type(row).patron.is_cached(row)}
    if not missing:
        return
    patrons = Patron.objects.in_bulk(missing)
    for rows in groups:
        for row in rows:
            if not type(row).patron.is_cached(row):
                row.patron = patrons[row.patron_id]


def session_game_state(session: TableSession, rows: GameRows | None = None) -> dict[str, Any]:
    """The tablet's view of the table: session, bank and banker, the coup in play (or the
    last one) with its bets, hands, what it needs next and the rule in force with the
    Regola hint (engine rule_in_force), the Regola marks, the bars, the shoe, the balances.

    `rows`: what the caller's write holds already (GameRows); the answer is the same as a
    fresh read's (the API tests' tablet, tests/tables/api/conftest.py, compares every write's
    answer with a fresh GET), in fewer queries."""
    fresh, rows, wanted = _state_reads(session, rows)
    read = dict(zip(wanted, prepared.read(*wanted.values()), strict=True))
    return _state_built(fresh, rows, read)


def _first_bank_waits(session: TableSession, *, banked: bool, seated: int) -> bool:
    """RULES.md §6: the session's first bank (none opened yet) waits for the table's
    min_seats_to_start numbered seats taken, while the session is open (bank_open refuses it,
    `not_enough_players`). The game state and first_bank_start_needs both ask it here."""
    return not banked and session.is_open and seated < session.table.min_seats_to_start


def first_bank_start_needs(session: TableSession) -> dict[str, int] | None:
    """While the session's first bank waits for seats (_first_bank_waits: the game state's
    `not_enough_players`), the seats it needs and those taken; None once the game may start, a
    bank has opened, or the session is not open. One query (the seats taken and whether a
    bank ever opened), whatever the places: the tablet asks it every few seconds while its
    Capo Partita waits (views_tablet.tablet_start_needs), and the whole game state would
    read a dozen tables for it."""
    if not session.is_open:
        return None
    taken = seats_taken_subquery()
    row = (
        TableSession.objects.filter(pk=session.pk)
        .annotate(seated=Subquery(taken), banked=Exists(Bank.objects.filter(session=OuterRef("pk"))))
        .values("seated", "banked")
        .first()
    )
    if row is None:
        return None
    seated = row["seated"] or 0
    if not _first_bank_waits(session, banked=row["banked"], seated=seated):
        return None
    return {"needed": session.table.min_seats_to_start, "seated": seated}


def session_game_states(sessions: Sequence[TableSession]) -> dict[int, dict[str, Any]]:
    """session_game_state of each session (by id), fresh, in three round trips however many
    there are (the floor dashboard's cards): their rows in one, then the latest successions
    of those with no active bank, then those successions' offers and bids."""
    plans = [_state_reads(session, None) for session in sessions]
    flat = [(i, name, query) for i, (_, _, wanted) in enumerate(plans) for name, query in wanted.items()]
    reads: list[dict[str, list[Any]]] = [{} for _ in plans]
    for (i, name, _), rows_read in zip(flat, _read_all([q for _, _, q in flat]), strict=True):
        reads[i][name] = rows_read
    # The latest successions of those between banks, as _current_succession reads one.
    between = [
        i for i, read in enumerate(reads)
        if not read["last_bank"] or read["last_bank"][0].status != Bank.Status.ACTIVE
    ]  # fmt: skip
    found = _latest_successions([sessions[i].pk for i in between])
    # Those before their first bank: their first bank's declines, in one query for all (run
    # whatever the sessions, so that the page costs the same queries however many it shows).
    first = [sessions[i].pk for i, read in enumerate(reads) if not read["last_bank"]]
    passes: dict[int, list[FirstBankPass]] = {pk: [] for pk in first}
    for row in FirstBankPass.objects.filter(session_id__in=[s.pk for s in sessions]) if sessions else ():
        if row.session_id in passes:
            passes[row.session_id].append(row)
    states = {}
    for i, ((fresh, rows, _), read) in enumerate(zip(plans, reads, strict=True)):
        if i in between:
            rows.succession = found.get(sessions[i].pk)
        rows.first_bank_passes = passes.get(sessions[i].pk)
        states[sessions[i].pk] = _state_built(fresh, rows, read)
    return states


def _read_all(queries: list[tuple[Prepared, tuple[Any, ...]]]) -> list[list[Any]]:
    return prepared.read(*queries) if queries else []


def _state_reads(
    session: TableSession, rows: GameRows | None
) -> tuple[bool, GameRows, dict[str, tuple[Prepared, tuple[Any, ...]]]]:
    """What session_game_state reads: (whether all is read fresh, the rows held, the queries
    for what is not held, by name)."""
    fresh = rows is None
    sid = session.pk
    # What the caller does not hold, read in one round trip (config.prepared.read); the last
    # coup's bets and calls by the session when the coup itself is read with them.
    wanted: dict[str, tuple[Prepared, tuple[Any, ...]]] = {}
    if fresh:
        wanted["session"] = (SESSION, (sid,))
        rows = GameRows(session)
    if rows.last_bank is None:
        wanted["last_bank"] = (LAST_BANK, (sid,))
    if rows.shoe is None:
        wanted["shoe"] = (ACTIVE_SHOE, (sid,))
    if rows.coup is None:
        wanted["coup"] = (LAST_COUP, (sid,))
        wanted["bets"] = (LAST_COUP_BETS, (sid,))
        wanted["calls"] = (LAST_COUP_CALLS, (sid,))
    else:
        if rows.bets is None:
            wanted["bets"] = (COUP_BETS, (rows.coup.pk,))
        if rows.calls is None:
            wanted["calls"] = (COUP_CALLS, (rows.coup.pk,))
    for name, query in (("seats", SEATS), ("marks", MARKS), ("bars", BARS)):
        if getattr(rows, name) is None:
            wanted[name] = (query, (sid,))
    wanted["balances"] = (_BALANCES, (sid,))
    wanted["players"] = (_PLAYER_NAMES, (sid,))
    return fresh, rows, wanted


def _state_built(fresh: bool, rows: GameRows, read: dict[str, list[Any]]) -> dict[str, Any]:
    """session_game_state from the rows held and those read (_state_reads)."""
    if fresh:
        if not read["session"]:
            raise TableSession.DoesNotExist("TableSession matching query does not exist.")
        rows.session = read["session"][0]
    session = rows.session
    profile = get_profile(session.table.profile)
    # The last bank is the active one when one is (a bank opens only when none is active,
    # numbers increase); ended, it still carries the rotation pointer. One query for both.
    last_bank = rows.last_bank if "last_bank" not in read else (read["last_bank"] or [None])[0]
    bank = last_bank if last_bank is not None and last_bank.status == Bank.Status.ACTIVE else None
    shoe, shoe_state = rows.shoe, rows.shoe_state
    if "shoe" in read:
        shoe, shoe_state = (read["shoe"] or [None])[0], None
    coup = rows.coup if "coup" not in read else (read["coup"] or [None])[0]
    bets = read.get("bets", rows.bets)
    calls = read.get("calls", rows.calls)
    seats = read.get("seats", rows.seats)
    marks = read.get("marks", rows.marks)
    bars = read.get("bars", rows.bars)
    if not fresh:
        _with_patrons(bets or [], calls or [], seats, marks, bars)
        if coup is not None and coup.punta_id is not None and not Coup.punta.is_cached(coup):
            coup.punta = next((b.patron for b in bets if b.patron_id == coup.punta_id), None) or coup.punta
        if last_bank is not None and not Bank.banker.is_cached(last_bank):
            last_bank.banker = next((s.patron for s in seats if s.patron_id == last_bank.banker_id), None) or (
                last_bank.banker
            )
    balances = read["balances"]
    names = _balance_names(balances, read["players"])
    # The bank passing (RULES.md §5): only while no bank is active (2 queries then, none
    # otherwise), whatever the number of offers and bids.
    succession = None
    if bank is None:
        succession = _current_succession(session) if rows.succession is NOT_READ else rows.succession
    in_play = coup is not None and coup.state not in COUP_FINISHED
    reasons = []
    if not session.is_open:
        reasons.append("session_closed" if session.is_closed else "session_interrupted")
    if bank is None:
        reasons.append("no_active_bank")
        # The session's first bank waits for the table's min_seats_to_start seats taken
        # (RULES.md §6): bank_open refuses it (`not_enough_players`); counted from the places read.
        seated = sum(1 for s in seats if s.seat_number is not None)
        if _first_bank_waits(session, banked=last_bank is not None, seated=seated):
            reasons.append("not_enough_players")
    if shoe is None:
        reasons.append("no_shoe")
    elif shoe.stop_card_reached_at is not None:
        reasons.append("stop_card_reached")
    if in_play:
        reasons.append("coup_in_progress")
    elif bank is not None and any(b.patron_id == bank.banker_id for b in bars):
        reasons.append("banker_barred")  # his bank ends before another coup (RULES.md §4)
    return {
        "session": {
            "id": session.pk,
            "status": session.status,
            "table": session.table.number,
            "profile": profile.name,
            "minimum": session.minimum,
            "maximum": session.maximum,
            "regola_allowed": profile.regola_allowed,
        },
        "bank": None
        if bank is None
        else {
            "id": bank.pk,
            "number": bank.number,
            "banker": _name(bank.banker),
            "seat_number": bank.seat.seat_number,
            "amount": bank.amount,
            "initial_amount": bank.initial_amount,
            "coups_completed": bank.coups_completed,
            "origin": bank.origin,
            "regola": any(m.patron_id == bank.banker_id and m.declared for m in marks),
        },
        "coup": None if coup is None or not in_play else _coup_state(coup, profile, bets, calls),
        "last_coup": None if coup is None or in_play else _coup_state(coup, profile, bets, calls),
        "can_open_coup": not reasons,
        "cannot_open_because": reasons,
        "shoe": _shoe_state(shoe, shoe_state),
        "seats": [
            {
                "patron": _name(s.patron),
                "seat_number": s.seat_number,
                "standing": s.standing,
                "barred": any(b.patron_id == s.patron_id for b in bars),
                "regola": any(m.patron_id == s.patron_id and m.declared for m in marks),
            }
            for s in seats
        ],
        "regola_marks": [{"patron": _name(m.patron), "declared": m.declared} for m in marks],
        "bars": [{"patron": _name(b.patron), "reason": b.reason, "at": _local(b.at)} for b in bars],
        "balances": [
            {"patron": r["patron_id"], "name": names[r["patron_id"]], "balance": r["total"]}
            for r in balances
            if r["patron_id"] is not None
        ],
        "house_cagnotte": sum(r["total"] for r in balances if r["patron_id"] is None),
        "rotation": _rotation(profile, session, last_bank, seats, bars, rows.first_bank_passes),
        "succession": None if succession is None else _succession_state(succession, bars, session, seats),
    }


# --------------------------------------------------------------------------- succession (RULES.md §5)


def _current_succession(session: TableSession) -> Succession | None:
    """The session's latest succession with its offers, auction and bids: 2 queries at most."""
    return _latest_successions([session.pk]).get(session.pk)


def _latest_successions(session_ids: list[int]) -> dict[int, Succession]:
    """Each session's latest succession (those that have one), with its offers, auction and
    bids, in two round trips however many sessions: the successions, then their offers and
    bids together, put where `succession.offers.all()` and `auction.bids.all()` find them,
    as prefetch_related would."""
    last = _read_all([(_LAST_SUCCESSION, (sid,)) for sid in session_ids])
    found = {sid: rows[0] for sid, rows in zip(session_ids, last, strict=True) if rows}
    nested: list[tuple[Any, str, tuple[Prepared, tuple[Any, ...]]]] = []
    for succession in found.values():
        nested.append((succession, "offers", (_OFFERS, (succession.pk,))))
        with contextlib.suppress(Auction.DoesNotExist):  # (select_related: no query)
            nested.append((succession.auction, "bids", (_BIDS, (succession.auction.pk,))))
    for (owner, name, _), rows in zip(nested, _read_all([q for _, _, q in nested]), strict=True):
        owner._prefetched_objects_cache = {name: rows}
    return found


def first_bank_pass_list(session: TableSession) -> list[dict[str, Any]]:
    """Who declined the session's first bank ("passe", RULES.md §5-§6), in the order they
    did: the seat whose turn it was and the player, one query."""
    return [
        {"seat_number": p.seat_number, "patron": _name(p.patron)}
        for p in FirstBankPass.objects.filter(session=session).select_related("patron").order_by("at", "pk")
    ]


def first_bank_turn(
    session: TableSession, seats: list[Seat], bars: list[FauxTirageBar], passes: list[FirstBankPass]
) -> int | None:
    """The seat whose turn it is for the session's first bank (RULES.md §6, §5): the first
    occupied seat from the profile's first banker seat (seat 1 when taken) in the profile's
    rotation, skipping who declined it and who is barred (he may not hold the cards). None
    when every seated player has declined: nobody opens the first bank."""
    profile = get_profile(session.table.profile)
    seated = {s.seat_number: s.patron_id for s in seats if s.seat_number is not None and s.left_at is None}
    return succession_rules.first_bank_seat(
        seated,
        first_seat=profile.first_banker_seat,
        rotation=profile.rotation,
        table_seats=session.table.seats,
        declined={p.patron_id for p in passes} | {b.patron_id for b in bars},
    )


def _rotation(
    profile,
    session: TableSession,
    last_bank: Bank | None,
    seats: list[Seat],
    bars: list[FauxTirageBar],
    passes: list[FirstBankPass] | None = None,
) -> dict[str, Any]:
    """The rotation pointer: the seat whose turn the (last) bank holds, and the seat the bank
    is offered to first when it passes (empty seats and the banker skipped). Before the
    session's first bank, `next_seat` is the seat whose turn it is to open it (RULES.md §6:
    seat 1 when taken, else the first occupied seat after it in rotation, skipping who
    declined it or is barred), the one bank_open accepts."""
    if profile.house_bank:
        return {"direction": str(profile.rotation), "turn_seat": None, "next_seat": None}
    if last_bank is None:
        passes = list(FirstBankPass.objects.filter(session=session)) if passes is None else passes
        return {
            "direction": str(profile.rotation),
            "turn_seat": None,
            "next_seat": first_bank_turn(session, seats, bars, passes),
        }
    turn = None if last_bank is None else last_bank.turn_seat
    banker_id = (
        last_bank.banker_id if last_bank is not None and last_bank.status == Bank.Status.ACTIVE else None
    )
    occupied = [s.seat_number for s in seats if s.seat_number is not None and s.patron_id != banker_id]
    return {
        "direction": str(profile.rotation),
        "turn_seat": turn,
        "next_seat": succession_rules.next_seat(
            occupied, after=turn, rotation=profile.rotation, table_seats=session.table.seats
        ),
    }


def _auction_state(
    succession: Succession, session: TableSession, present: set[int], barred: set[int]
) -> dict[str, Any] | None:
    try:
        auction: Auction = succession.auction
    except Auction.DoesNotExist:
        return None
    bids = list(auction.bids.all())
    void = succession_rules.bids_void(
        ((b.pk, b.patron_id, b.amount) for b in bids),
        present=present, barred=barred, minimum=session.minimum, maximum=session.maximum,
    )  # fmt: skip
    return {
        "id": auction.pk,
        "status": auction.status,
        "opened_at": _local(auction.opened_at),
        "closed_at": _local(auction.closed_at),
        # the best bid that stands (an open asta: what a new bid must reach)
        "best": max((b.amount for b in bids if not void[b.pk]), default=None),
        "winning_bid": auction.winning_bid_id,
        "bids": [
            {
                "id": b.pk,
                "seq": b.seq,
                "patron": _name(b.patron),
                "amount": b.amount,
                "seat_number": b.seat_number,
                "standing": b.standing,
                "at": _local(b.at),
                "void": (void[b.pk] or None) if auction.status == Auction.Status.OPEN else None,
            }
            for b in bids
        ],
    }


def _succession_state(
    succession: Succession, bars: list[FauxTirageBar], session: TableSession, seats: list[Seat]
) -> dict[str, Any]:
    offers = list(succession.offers.all())
    # A new bank is taken at today's minimum (the Commissario may change it during play, §6):
    # an offer still to be answered shows the terms offer_accept applies, not those of when
    # it was laid out; an answered one keeps the terms it was answered on.
    live = succession.status in Succession.LIVE

    def amount_min(o: SuccessionOffer) -> int | None:
        if live and o.status == SuccessionOffer.Status.PENDING and o.round in succession_rules.NEW_BANK_ROUNDS:
            return session.minimum
        return o.amount_min

    def amount_max(o: SuccessionOffer) -> int | None:
        # No bound of its own (a new bank; domestic at the height): the table maximum in force
        # binds it (offer_accept refuses above it, `bank_above_maximum`), so the offer shows it;
        # a continuation already above the maximum is taken at that floor. Answered, it keeps
        # the one it was answered under (services.succession._in_force). Null: no maximum.
        if (
            live
            and o.status == SuccessionOffer.Status.PENDING
            and o.amount_max is None
            and session.maximum is not None
        ):
            return max(session.maximum, amount_min(o) or 0)
        return o.amount_max

    engine_offers = tuple(
        succession_rules.Offer(
            o.order,
            succession_rules.Round(o.round),
            o.patron_id,
            o.seat_number,
            o.amount_min,
            o.amount_max,
            succession_rules.Status(o.status),
        )
        for o in offers
    )
    turn = (
        {o.order for o in succession_rules.current(engine_offers)}
        if succession.status == Succession.Status.OFFERING
        else set()
    )
    barred = {b.patron_id for b in bars}
    return {
        "id": succession.pk,
        "number": succession.number,
        "reason": succession.reason,
        "kind": succession.kind,
        "status": succession.status,
        "lapse_reason": succession.lapse_reason or None,
        "previous_bank": succession.previous_bank_id,
        "outgoing_banker": _name(succession.outgoing_banker),
        "amount": succession.amount,
        "floor": succession.floor,
        "minimum": session.minimum if live else succession.minimum,  # the one in force while it lasts
        "after_seat": succession.after_seat,
        "new_bank": succession.new_bank_id,
        "started_at": _local(succession.started_at),
        "ended_at": _local(succession.ended_at),
        "offers": [
            {
                "id": o.pk,
                "order": o.order,
                "round": o.round,
                "patron": _name(o.patron),
                "seat_number": o.seat_number,
                "standing": o.standing,
                "amount_min": amount_min(o),
                "amount_max": amount_max(o),
                "status": o.status,
                "reason": o.reason or None,
                "amount": o.amount,
                "current": o.order in turn,
                # who is no longer there will be skipped at the next answer
                "present": o.seat.left_at is None and o.patron_id not in barred,
                "answered_at": _local(o.answered_at),
            }
            for o in offers
        ],
        "auction": _auction_state(succession, session, {s.patron_id for s in seats}, barred),
    }


def succession_state(*, session: TableSession) -> dict[str, Any]:
    """The bank passing at a table (RULES.md §5): the rotation pointer, and the latest
    succession with its offers (whose turn it is), its auction and the bids. 7 queries."""
    session = TableSession.objects.select_related("table").get(pk=session.pk)
    profile = get_profile(session.table.profile)
    last_bank = Bank.objects.filter(session=session).order_by("-number").first()
    seats = list(Seat.objects.filter(session=session, left_at__isnull=True))
    bars = list(FauxTirageBar.objects.filter(session=session))
    succession = _current_succession(session)
    return {
        "session": session.pk,
        "profile": profile.name,
        "bank": None
        if last_bank is None or last_bank.status != Bank.Status.ACTIVE
        else {"id": last_bank.pk, "banker": last_bank.banker_id, "amount": last_bank.amount},
        "rotation": _rotation(profile, session, last_bank, seats, bars),
        "succession": None if succession is None else _succession_state(succession, bars, session, seats),
    }


# --------------------------------------------------------------------------- the changeur's register


def cash_exchange_list(*, session: TableSession | int) -> QuerySet[CashExchange]:
    """The session's register, line by line (voided lines included), in one query."""
    session_id = session if isinstance(session, int) else session.pk
    return CashExchange.objects.filter(session_id=session_id).select_related("patron").order_by("number")


def cash_exchange_totals(*, session: TableSession | int, until: datetime | None = None) -> dict[str, int]:
    """The register's totals, cents, voided lines left out (one query): `buy_ins` (cash
    taken for chips), `cash_outs` (cash paid for chips), `net` (the cash the table took:
    buy_ins - cash_outs), `count` lines standing, `voided` lines voided, and `unnamed`: what
    the standing lines without a patron come to (linked together, tables.services.cash).

    `until`: only the lines recorded at or before it (a changeur's handover: his lines,
    tables.services.cash_count), the voids as they stand now."""
    session_id = session if isinstance(session, int) else session.pk
    standing = Q(voided_at__isnull=True)
    lines = CashExchange.objects.filter(session_id=session_id)
    if until is not None:
        lines = lines.filter(at__lte=until)
    row = lines.aggregate(
        buy_ins=Sum("amount", filter=standing & Q(direction=CashExchange.Direction.BUY_IN), default=0),
        cash_outs=Sum("amount", filter=standing & Q(direction=CashExchange.Direction.CASH_OUT), default=0),
        count=Count("pk", filter=standing),
        voided=Count("pk", filter=~standing),
        unnamed=Sum("amount", filter=standing & Q(patron__isnull=True), default=0),
    )
    return {
        "buy_ins": row["buy_ins"],
        "cash_outs": row["cash_outs"],
        "net": row["buy_ins"] - row["cash_outs"],
        "count": row["count"],
        "voided": row["voided"],
        "unnamed": row["unnamed"],
    }


def cash_exchange_nets_until(*, session: TableSession | int, until: Sequence[datetime]) -> list[int]:
    """The register's net (cents, voided lines left out) of the lines recorded at or before each
    of `until`, in its order: cash_exchange_totals(session=, until=t)["net"] for each t, the voids
    as they stand now, in ONE query however many (a conditional sum per time; none for no time).
    A session's changeurs' handovers not counted each say what their drawer should hold."""
    if not until:
        return []
    session_id = session if isinstance(session, int) else session.pk
    signed = Case(
        When(direction=CashExchange.Direction.BUY_IN, then=F("amount")),
        default=-F("amount"),
        output_field=BigIntegerField(),
    )
    standing = Q(voided_at__isnull=True)
    row = CashExchange.objects.filter(session_id=session_id).aggregate(
        **{f"net_{n}": Sum(signed, filter=standing & Q(at__lte=moment), default=0) for n, moment in enumerate(until)}
    )
    return [row[f"net_{n}"] for n in range(len(until))]


def cash_count_history(*, session: TableSession | int) -> list[CashCount]:
    """Every count of the session's drawer, oldest first, corrected ones included, with who
    counted (one query, however many corrections). The one in force is the last: each
    correction refers to the count then in force (tables.services.cash_count)."""
    session_id = session if isinstance(session, int) else session.pk
    rows = list(
        CashCount.objects.filter(session_id=session_id)
        .select_related("counted_by", "staff_change")
        .order_by("counted_at", "pk")
    )
    superseded = {row.corrects_id: row.pk for row in rows if row.corrects_id is not None}
    for row in rows:
        row.superseded_by_id = superseded.get(row.pk)
        row.in_force = row.superseded_by_id is None
    cash_count_since_handover(rows)
    return rows


def cash_count_since_handover(rows: Sequence[CashCount]) -> None:
    """Set on each of a session's counts (its whole history, `in_force` set, `staff_change`
    loaded) the part of its difference that arose after the changeur's last handover counted
    before it: `since_staff_change` (that handover's staff change) and `since_handover` = its
    difference less that handover's count in force's; both None when no earlier handover was
    counted. Derived, never stored: every count holds the whole drawer since the float slip
    (tables.services.cash_count), so the difference a changeur made between two handovers is
    the later difference less the earlier one. The final count comes after every handover."""
    handovers = sorted(
        (row for row in rows if row.staff_change_id is not None and row.in_force),
        key=lambda row: (row.staff_change.at, row.staff_change_id),
    )
    for row in rows:
        mine = None if row.staff_change_id is None else (row.staff_change.at, row.staff_change_id)
        before = [h for h in handovers if mine is None or (h.staff_change.at, h.staff_change_id) < mine]
        last = before[-1] if before else None
        row.since_staff_change_id = None if last is None else last.staff_change_id
        row.since_handover = None if last is None else row.difference - last.difference
        # The chips likewise, when both counts counted them (a tray short at the handover and as
        # short at the end is no shortfall of the successor's).
        row.chips_since_handover = (
            None if last is None or row.chips_difference is None or last.chips_difference is None
            else row.chips_difference - last.chips_difference
        )  # fmt: skip


def drawer_count_window(*, session: TableSession) -> str:
    """When a closed session's drawer may be counted (tables.services.cash_count): "open"
    while its gaming day is (the count's event goes to the session's stream), "late" once
    the day is closed and until its control register in force is signed by both (the event
    goes to the day's books stream), "books_signed" after (refused). Two queries at most."""
    if GamingDay.objects.filter(pk=session.gaming_day_id, closed_at__isnull=True).exists():
        return "open"
    return "late" if books_signed_register(gaming_day_id=session.gaming_day_id) is None else "books_signed"


def closed_sessions_with_drawer(day_ids: list[int]) -> dict[int, list[TableSession]]:
    """The days' closed sessions, each with whether its drawer is counted
    (tables.services.cash_count: its final count; a changeur's handover counted is not the
    session's drawer), by day: one query however many. (The floor's dashboard asks
    it of the open days; the desk's page of a day, of that day, open or closed: a drawer is
    counted late after the close.)"""
    if not day_ids:
        return {}
    sessions = (
        TableSession.objects.filter(gaming_day_id__in=day_ids, status=TableSession.Status.CLOSED)
        .select_related("table")
        .annotate(drawer_counted=Exists(CashCount.objects.filter(session=OuterRef("pk"), staff_change__isnull=True)))
        .order_by("table__number", "number")
    )
    out: dict[int, list[TableSession]] = {}
    for session in sessions:
        out.setdefault(session.gaming_day_id, []).append(session)
    return out


def handovers_not_counted(day_ids: list[int]) -> dict[int, list[StaffChange]]:
    """The days' changeurs' handovers whose drawer is not counted, by day: each staff change of
    a session of those days that relieved its changeur (old_changeur != new_changeur; a change
    of the Capo Partita alone hands no drawer over) with no count of it (no original count with
    that staff change: a correction always follows one, so none at all), the session running
    or closed (a handover is counted from the change on: tables.services.cash_count), with the
    session's table and the changeurs, by table, session and time: one query however many. The
    supervisors are told of them where they are told of the sessions' drawers not counted (the
    floor, the desk's page of a day and its register's signature)."""
    if not day_ids:
        return {}
    out: dict[int, list[StaffChange]] = {}
    for change in _handovers_not_counted(Q(session__gaming_day_id__in=day_ids)):
        out.setdefault(change.session.gaming_day_id, []).append(change)
    return out


def handovers_not_counted_by_session(session_ids: list[int]) -> dict[int, list[StaffChange]]:
    """handovers_not_counted of these sessions, by session (the floor's table cards, each with
    its running session's handovers to count): one query however many, none for no session."""
    if not session_ids:
        return {}
    out: dict[int, list[StaffChange]] = {}
    for change in _handovers_not_counted(Q(session_id__in=session_ids)):
        out.setdefault(change.session_id, []).append(change)
    return out


def handovers_with_counts(day_ids: list[int]) -> dict[int, list[StaffChange]]:
    """Every changeur's handover of the days' sessions, counted or not (a staff change that
    relieved the changeur), each with `count`: its count in force (None: not counted), the
    session's table and the changeurs loaded, by day, by table, session and time: two queries
    however many. (The desk's page of a day: an auditor sees every drawer relieved that day.)"""
    if not day_ids:
        return {}
    changes = list(_handovers(Q(session__gaming_day_id__in=day_ids)))
    counts = {
        count.staff_change_id: count
        for count in CashCount.objects.filter(staff_change__in=[c.pk for c in changes], corrected_by__isnull=True)
    } if changes else {}  # fmt: skip
    out: dict[int, list[StaffChange]] = {}
    for change in changes:
        change.count = counts.get(change.pk)
        out.setdefault(change.session.gaming_day_id, []).append(change)
    return out


def final_counts_in_force(day_ids: list[int]) -> dict[int, CashCount]:
    """The days' sessions' final drawer counts in force (a count with no staff change that no
    other corrects: the original, or the last correction of it), by session: one query however
    many sessions and counts. (The desk's page of a day: each drawer's difference beside its
    handovers', so that a drawer's whole story is read in one place.)"""
    if not day_ids:
        return {}
    counts = CashCount.objects.filter(
        session__gaming_day_id__in=day_ids, staff_change__isnull=True, corrected_by__isnull=True
    )
    return {count.session_id: count for count in counts}


def _handovers(where: Q) -> QuerySet[StaffChange]:
    return (
        StaffChange.objects.filter(where)
        .exclude(old_changeur=F("new_changeur"))
        .select_related("session__table", "old_changeur", "new_changeur")
        .order_by("session__table__number", "session__number", "at", "pk")
    )


def _handovers_not_counted(where: Q) -> QuerySet[StaffChange]:
    return _handovers(where).exclude(
        Exists(CashCount.objects.filter(staff_change=OuterRef("pk"), corrects__isnull=True))
    )


def drawers_left_to_count(
    *, casinos: list[Casino]
) -> dict[int, tuple[GamingDay, list[TableSession], list[StaffChange]]]:
    """For each of these casinos, its last closed gaming day, with that day's closed sessions
    whose drawer is not counted and its changeurs' handovers not counted (handovers_not_counted)
    (tables.services.cash_count: a drawer is counted late until the day's control register in
    force is signed by both), by casino; a casino is left out once that day's books are signed
    (a correction of the register, until its own two signatures, opens them again) or every
    drawer of it, the handovers' included, is counted. Four queries however many casinos, days,
    sessions and handovers. (The floor asks it of the casinos with no day open: once the day is
    closed its drawers were listed nowhere there.)"""
    if not casinos:
        return {}
    last = GamingDay.objects.filter(casino=OuterRef("pk"), closed_at__isnull=False).order_by("-date", "-pk")
    days = list(
        GamingDay.objects.filter(
            pk__in=Casino.objects.filter(pk__in=[c.pk for c in casinos]).values(day=Subquery(last.values("pk")[:1]))
        )
    )
    signed = books_signed_days(gaming_day_ids=[day.pk for day in days])
    open_books = {day.pk: day for day in days if day.pk not in signed}
    sessions = closed_sessions_with_drawer(list(open_books))
    handovers = handovers_not_counted(list(open_books))
    out: dict[int, tuple[GamingDay, list[TableSession], list[StaffChange]]] = {}
    for day_id, day in open_books.items():
        left = [session for session in sessions.get(day_id, []) if not session.drawer_counted]
        if left or handovers.get(day_id):
            out[day.casino_id] = (day, left, handovers.get(day_id, []))
    return out
