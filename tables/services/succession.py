"""Passing the bank and the auction (RULES.md §5): the succession laid out when a bank ends,
the players' answers (the Capo Partita records what they say), the asta.

When a bank ends by a loss (tables.services.settlement) or a withdrawal (bank_withdraw), the
same transaction starts its succession (`succession_start`): every offer, in the order of
the right to the bank, with its terms, from tables.engine.succession. Each answer is one
transaction: the session lock first, then the succession row, then its auction (the lock
order of ARCHITECTURE.md, extended: day -> session -> bank -> coup -> succession -> auction),
the rule from the engine, the rows and the audit event together. Because every service
locks the session row first, two answers, two bids or a bid and the close never interleave:
bids get their seq in the order they obtain the lock, and the bank is taken once (the
partial unique indexes of tables/models.py are the backstop).

Who acts: the Capo Partita assigned to the session records acceptances, passes and bids
(the players speak, he records); the auction is opened and closed by him or by a
Commissario; nobody else. A departure (a place released, a player barred) and the
resumption of play may also decide a succession: their events name that user as the
actor and say so (`cause`, see _settle). While play is interrupted nothing takes a bank:
every answer and the asta refuse, and a departure only records the turns it skips
(succession_departure); the decision waits for the resumption (succession_resume)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from django.db import transaction
from django.db.models import Exists, Max, OuterRef

from config import prepared
from config.errors import ApplicationError, Conflict, NotAllowed
from config.prepared import Prepared
from config.transactions import service_atomic
from floor.models import Patron, Seat, TableSession
from floor.roles import Role, has_role
from tables.engine import Profile
from tables.engine import succession as rules

from ..models import Auction, Bank, Bid, Coup, FauxTirageBar, Succession, SuccessionOffer

# bank.py imports this module's hooks; this module needs bank.py's row writer at call time
# only, so the module (not its names) is imported: no import cycle at load time.
from . import bank as bank_services
from ._common import (
    User,
    active_bank,
    audit,
    engine_errors,
    is_barred,
    lock_session,
    now,
    place_of,
    profile_of,
)

# The engine's refusals that depend on the moment (someone answered first, it is not his
# turn yet) are conflicts with the current state: 409, as the other state refusals here.
_CONFLICTS = frozenset({"not_your_turn", "offer_answered", "offers_pending", "bank_claimed"})


@contextmanager
def rule_errors() -> Iterator[None]:
    try:
        with engine_errors():
            yield
    except ApplicationError as exc:
        if exc.code in _CONFLICTS and not isinstance(exc, Conflict):
            raise Conflict(exc.code, exc.message, details=exc.details) from None
        raise


# --------------------------------------------------------------------------- locks and checks


def _lock_floor(session_id: int, by: User) -> TableSession:
    """Lock the session for a step the Capo Partita of the table or a Commissario may take
    (opening and closing the auction): the same checks as lock_session otherwise."""
    locked = TableSession.objects.select_for_update(of=("self",)).select_related("table").get(pk=session_id)
    if by is None or not (by.pk == locked.capo_partita_id or has_role(by, Role.COMMISSARIO)):
        raise NotAllowed(
            "not_capo_partita_or_commissario",
            "Only the table's Capo Partita or a Commissario opens and closes the auction.",
            details={"session": locked.pk},
        )
    if locked.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": locked.pk})
    if not locked.is_open:
        raise Conflict(
            "session_interrupted", "Play is interrupted at this table.", details={"session": locked.pk}
        )
    return locked


def _lock_succession(pk: int) -> Succession:
    return Succession.objects.select_for_update(of=("self",)).select_related("previous_bank").get(pk=pk)


def _require_offering(succ: Succession) -> None:
    if succ.status == Succession.Status.TAKEN:
        raise Conflict(
            "bank_already_taken",
            "The bank has been taken already.",
            details={"succession": succ.pk, "bank": succ.new_bank_id},
        )
    if succ.status != Succession.Status.OFFERING:
        raise Conflict(
            "succession_not_open",
            "The bank is no longer offered in turn.",
            details={"succession": succ.pk, "status": succ.status},
        )


def _check_holder(session: TableSession, succ: Succession, patron: Patron) -> Seat:
    """The patron is at the table, may hold the cards, and is not the outgoing banker."""
    seat = place_of(session, patron)
    if is_barred(session, patron.pk):
        raise ApplicationError(
            "patron_barred",
            "The patron is barred from holding the cards at this session.",
            details={"patron": patron.pk},
        )
    if patron.pk == succ.outgoing_banker_id:
        raise ApplicationError(
            "outgoing_banker",
            "The outgoing banker does not take his own bank back.",
            details={"patron": patron.pk},
        )
    return seat


def _check_amount(amount: object) -> None:
    if type(amount) is not int or amount <= 0:
        raise ApplicationError(
            "bad_amount", "The bank is a positive whole number of cents.", details={"amount": amount}
        )


# --------------------------------------------------------------------------- offers, engine <-> rows


def _engine_offers(rows: list[SuccessionOffer]) -> tuple[rules.Offer, ...]:
    return tuple(
        rules.Offer(
            order=r.order,
            round=rules.Round(r.round),
            key=r.patron_id,
            seat_number=r.seat_number,
            amount_min=r.amount_min,
            amount_max=r.amount_max,
            status=rules.Status(r.status),
            reason=r.reason,
            amount=r.amount,
        )
        for r in rows
    )


def _offer_dict(o: rules.Offer) -> dict[str, Any]:
    return {
        "order": o.order,
        "round": str(o.round),
        "patron": o.key,
        "seat_number": o.seat_number,
        "amount_min": o.amount_min,
        "amount_max": o.amount_max,
        "status": str(o.status),
        "reason": str(o.reason),
        "amount": o.amount,
    }


def _save(rows: list[SuccessionOffer], offers: tuple[rules.Offer, ...], by: User) -> list[dict[str, Any]]:
    """Write what changed; return the changes (for the audit event)."""
    by_order = {o.order: o for o in offers}
    at, changed = now(), []
    for row in rows:
        new = by_order[row.order]
        if (row.status, row.reason, row.amount) == (str(new.status), str(new.reason), new.amount):
            continue
        row.status, row.reason, row.amount = str(new.status), str(new.reason), new.amount
        # the terms it was answered on: those in force (_in_force, §6)
        row.amount_min, row.amount_max = new.amount_min, new.amount_max
        row.answered_at, row.answered_by = at, by
        changed.append(row)
    if changed:
        SuccessionOffer.objects.bulk_update(
            changed, ["status", "reason", "amount", "amount_min", "amount_max", "answered_at", "answered_by"]
        )
    return [
        {"order": r.order, "patron": r.patron_id, "status": r.status, "reason": r.reason, "amount": r.amount,
         "amount_min": r.amount_min, "amount_max": r.amount_max, "answered_at": at.isoformat()}
        for r in changed
    ]  # fmt: skip


def _in_force(session: TableSession, offers: tuple[rules.Offer, ...]) -> tuple[rules.Offer, ...]:
    """The offers on the terms in force now, which an offer answered or skipped now is
    recorded with (_save; a lapse, the same in SQL: _skip_unanswered_sql): a new bank is at
    least today's minimum (§2.1, §6: the Commissario may change it during play), not the
    minimum when the offers were laid out; an offer with no bound of its own (a new bank;
    domestic at the height) is bound by today's maximum (a continuation already above it is
    taken at that floor), and by none when there is none. The game state shows a pending offer's terms the same way (selectors._succession_state)."""
    offers = tuple(
        replace(o, amount_min=session.minimum) if o.round in rules.NEW_BANK_ROUNDS else o for o in offers
    )
    if session.maximum is None:
        return offers
    return tuple(
        replace(o, amount_max=max(session.maximum, o.amount_min)) if o.amount_max is None else o
        for o in offers
    )


def _rows(succ: Succession) -> list[SuccessionOffer]:
    return list(SuccessionOffer.objects.filter(succession=succ).select_related("seat").order_by("order"))


def _withdrawn(session: TableSession, rows: list[SuccessionOffer]) -> tuple[rules.Offer, ...]:
    """Nobody waits for a player who has left his place or been barred since the bank was
    offered: his pending offers are skipped (the same transaction as the answer). Decides
    nothing: see _present."""
    offers = _in_force(session, _engine_offers(rows))
    barred = set(FauxTirageBar.objects.filter(session=session).values_list("patron_id", flat=True))
    # (a claim not yet decided is withdrawn too: he cannot hold a bank he is not there for)
    pending = [r for r in rows if r.status in (SuccessionOffer.Status.PENDING, SuccessionOffer.Status.CLAIMED)]
    left = {r.patron_id for r in pending if r.seat.left_at is not None}
    offers = rules.withdraw(offers, left, rules.Skip.LEFT)
    return rules.withdraw(offers, {r.patron_id for r in pending} & (barred - left), rules.Skip.BARRED)


def _present(session: TableSession, succ: Succession, rows: list[SuccessionOffer]) -> rules.Answer:
    """The offers once the departed are skipped (_withdrawn), and what that decides: a
    claim now won (chemmy-fi: the nearer players left), or nobody left to ask."""
    return rules.decide(_withdrawn(session, rows))


# --------------------------------------------------------------------------- starting


_PLACES = Prepared(
    lambda session_id: Seat.objects.filter(session_id=session_id, left_at__isnull=True).order_by(
        "standing", "taken_at", "id"
    )
)
_BARRED = Prepared(lambda session_id: FauxTirageBar.objects.filter(session_id=session_id).values("patron_id"))
_HAS_SUCCESSION = Prepared(lambda bank_id: Succession.objects.filter(previous_bank_id=bank_id).values("pk")[:1])
_LAST_NUMBER = Prepared(
    lambda session_id: Succession.objects.filter(session_id=session_id).order_by("-number").values("number")[:1]
)


def _places(
    session: TableSession, seats: list[Seat] | None = None, barred: set[int] | None = None
) -> tuple[list[rules.Place], dict[int, Seat]]:
    """The session's active places in the order the succession offers (seated first, then
    standing by arrival) and who may hold the cards; from `seats` and `barred` when the
    caller holds them (the session's active places and bars, as read in its transaction)."""
    if seats is None:
        seats = _PLACES.all(session.pk)
    else:
        seats = sorted(seats, key=lambda s: (s.standing, s.taken_at, s.pk))
    if barred is None:
        barred = {row["patron_id"] for row in _BARRED.all(session.pk)}
    places = [rules.Place(s.patron_id, s.seat_number, s.patron_id not in barred) for s in seats]
    return places, {s.patron_id: s for s in seats}


def succession_start(
    *,
    session: TableSession,
    bank: Bank,
    by: User,
    reason: str | None = None,
    seats: list[Seat] | None = None,
    barred: set[int] | None = None,
) -> Succession | None:
    """Lay out the succession of a bank that ends by a loss or a withdrawal (`reason`,
    default the bank's end_reason; RULES.md §5). Runs inside the transaction that ends the
    bank, with the session and bank locks held (settle_coup, bank_withdraw): not a use case
    of its own. Returns None where the bank never passes or it has its succession already.

    `seats` and `barred`: the session's active places (their patrons loaded) and barred
    patrons when the caller holds them. The succession returned carries its offers (with
    their patrons and seats) where the game state looks for them (selectors.GameRows)."""
    profile = profile_of(session)
    reason = reason or bank.end_reason
    if reason not in (Bank.EndReason.LOST, Bank.EndReason.WITHDRAWN):
        return None
    if _HAS_SUCCESSION.first(bank.pk) is not None:
        return None
    with rule_errors():
        kind = rules.kind_for(profile, reason)
    places, by_patron = _places(session, seats, barred)
    amount = floor = None
    if kind in (rules.Kind.ALL_ALTEZZA, rules.Kind.EQUAL_BANK):
        amount = bank.amount
    elif kind == rules.Kind.CONTINUATION:
        last = Coup.objects.filter(bank=bank, state=Coup.State.SETTLED).order_by("-number").first()
        floor = rules.continuation_floor(
            profile,
            bank_amount=bank.amount,
            last_winner=last.winner if last else None,
            last_covered=last.covered if last else 0,
        )
    after = bank.turn_seat if bank.turn_seat is not None else bank.seat.seat_number
    with rule_errors():
        offers = rules.build_offers(
            kind,
            places=places,
            outgoing=bank.banker_id,
            after=after,
            rotation=profile.rotation,
            table_seats=session.table.seats,
            minimum=session.minimum,
            amount=amount,
            floor=floor,
        )
    at = now()
    last = _LAST_NUMBER.first(session.pk)
    number = (last["number"] if last else 0) + 1
    succ = Succession(
        session=session,
        number=number,
        previous_bank=bank,
        outgoing_banker_id=bank.banker_id,
        reason=reason,
        kind=kind,
        profile=profile.name,
        amount=amount,
        floor=floor,
        minimum=session.minimum,
        after_seat=after,
        started_at=at,
        started_by=by,
    )
    prepared.insert([succ])
    rows = prepared.insert(
        [
            SuccessionOffer(
                succession=succ,
                order=o.order,
                round=o.round,
                patron_id=o.key,
                seat=by_patron[o.key],
                seat_number=o.seat_number,
                standing=o.standing,
                amount_min=o.amount_min,
                amount_max=o.amount_max,
                status=o.status,
                reason=o.reason,
            )
            for o in offers
        ]
    )
    # As the game state reads it back (selectors._current_succession): its offers in order
    # with their patrons and seats, its outgoing banker, and no auction yet.
    for row in rows:
        if Seat.patron.is_cached(row.seat):
            row.patron = row.seat.patron
    succ._prefetched_objects_cache = {"offers": sorted(rows, key=lambda r: r.order)}
    Succession.auction.related.set_cached_value(succ, None)
    if Bank.banker.is_cached(bank):
        succ.outgoing_banker = bank.banker
    audit(
        session,
        by,
        "succession.started",
        succ,
        {
            "number": number,
            "previous_bank": bank.pk,
            "outgoing_banker": bank.banker_id,
            "reason": reason,
            "kind": str(kind),
            "profile": profile.name,
            "rotation": str(profile.rotation),
            "after_seat": after,
            "amount": amount,
            "floor": floor,
            "minimum": session.minimum,
            "maximum": session.maximum,
            "offers": [_offer_dict(o) for o in offers],
            "turn": [o.key for o in rules.current(offers)],
            "at": at.isoformat(),
        },
    )
    if not rules.current(offers):  # nobody to offer it to: everybody else barred, or alone
        _exhausted(session, succ, profile, by)
    return succ


def _exhausted(session: TableSession, succ: Succession, profile: Profile, by: User, **why: Any) -> None:
    """Nobody took the bank in turn: it goes to auction where the profile has one (§5),
    else (domestic, seed 002) nobody opens a bank and the succession lapses. `why`: what
    the events add (the `cause`, see _settle)."""
    if rules.auction_allowed(profile):
        succ.status = Succession.Status.UNCLAIMED
        succ.save(update_fields=["status"])
        audit(
            session, by, "succession.unclaimed", succ, {"succession": succ.pk, "auction_allowed": True, **why}
        )
    else:
        _lapse(session, succ, by, "nobody_accepted", **why)


def _skip_unanswered_sql(session: TableSession, succ: Succession, at: Any, by: User) -> tuple[str, list[Any]]:
    """UPDATE the succession's offers still pending or claimed to skipped (lapsed), answered
    at `at` by `by`, on the terms in force (those _in_force gives, as every other way an offer
    is settled records them: a new bank at today's minimum; an offer with no bound of its own
    bound by today's maximum, max(maximum, its minimum), and by none when there is none),
    RETURNING each one's order, patron, amount, amount_min and amount_max as recorded; its
    SQL built once per connection (one form with a maximum in force, one without)."""
    connection = transaction.get_connection()
    field = SuccessionOffer._meta.get_field
    bounded = session.maximum is not None
    rounds = sorted(str(r) for r in rules.NEW_BANK_ROUNDS)

    def make() -> str:
        quote = connection.ops.quote_name
        column = lambda name: quote(field(name).column)  # noqa: E731
        sets = [f"{column(name)} = %s" for name in ("status", "reason", "answered_at", "answered_by")]
        # Each SET reads the row as it was (SQL): the new minimum is written out where the
        # ceiling needs it. Plain CASE (no GREATEST): the same text on SQLite.
        low = f"CASE WHEN {column('round')} IN ({', '.join(['%s'] * len(rounds))}) THEN %s ELSE {column('amount_min')} END"
        sets.append(f"{column('amount_min')} = {low}")
        if bounded:
            sets.append(
                f"{column('amount_max')} = CASE WHEN {column('amount_max')} IS NOT NULL THEN {column('amount_max')} "
                f"WHEN {low} > %s THEN {low} ELSE %s END"
            )
        returned = ", ".join(column(name) for name in ("order", "patron", "amount", "amount_min", "amount_max"))
        # Only the model's own table and column names are interpolated; values are parameters.
        return (
            f"UPDATE {quote(SuccessionOffer._meta.db_table)} SET {', '.join(sets)} "  # noqa: S608
            f"WHERE {column('succession')} = %s AND {column('status')} IN (%s, %s) RETURNING {returned}"
        )

    sql = prepared._cached_sql(connection, ("update", "tables.SuccessionOffer", "lapse", bounded), make)
    low = [*((field("round"), r) for r in rounds), (field("amount_min"), session.minimum)]
    values = [
        (field("status"), SuccessionOffer.Status.SKIPPED),
        (field("reason"), str(rules.Skip.LAPSED)),
        (field("answered_at"), at),
        (field("answered_by"), by.pk),
        *low,
    ]
    if bounded:
        values += [*low, (field("amount_max"), session.maximum), *low, (field("amount_max"), session.maximum)]
    values += [
        (field("succession"), succ.pk),
        (field("status"), SuccessionOffer.Status.PENDING),
        (field("status"), SuccessionOffer.Status.CLAIMED),
    ]
    return sql, [f.get_db_prep_save(value, connection=connection) for f, value in values]


def _lapse(session: TableSession, succ: Succession, by: User, reason: str, **data: Any) -> None:
    at = now()
    succ.status, succ.lapse_reason, succ.ended_at, succ.ended_by = Succession.Status.LAPSED, reason, at, by
    succ.minimum = session.minimum  # the one it ended under (it may have changed meanwhile, §6)
    # Offers still unanswered never will be: they say so (skipped, lapsed), rather than stay
    # "pending". The succession's UPDATE and the offers' (returning the rows it skipped, for
    # the record), in one round trip: a bank entered directly after a loss lapses a
    # succession of a whole table's offers, at every such bank.
    ended, skipped = prepared.write(
        [
            prepared.update_sql(succ, ["status", "lapse_reason", "ended_at", "ended_by", "minimum"], returning=True),
            _skip_unanswered_sql(session, succ, at, by),
        ],
        every=True,
    )
    prepared.updated_one(succ, ended)
    skipped = sorted(skipped or ())  # by order (unique within the succession)
    if skipped:
        data = {
            **data,
            "changes": [
                # (a claim keeps its amount on the row, as a claim skipped otherwise does: so here)
                # (and the terms in force it was skipped under, as _save records them)
                {"order": order, "patron": patron, "status": "skipped", "reason": "lapsed", "amount": amount,
                 "amount_min": amount_min, "amount_max": amount_max, "answered_at": at.isoformat()}
                for order, patron, amount, amount_min, amount_max in skipped
            ],
        }
    audit(session, by, "succession.lapsed", succ,
          {"succession": succ.pk, "reason": reason, "at": at.isoformat(), **data})  # fmt: skip


def _take(
    session: TableSession,
    succ: Succession,
    by: User,
    *,
    patron_id: int,
    seat: Seat,
    amount: int,
    origin: str,
    turn_seat: int | None,
    cause: str,
    why: dict[str, Any],
) -> Bank:
    """The winner opens his bank (origin succession or auction) and the succession ends,
    taken. `by` is the user whose action decided it, honestly: the Capo Partita recording an
    answer, whoever released a place or barred a player (a departure), whoever resumed play,
    whoever closed the asta; `cause` says which ("answer", "departure", "resume", "auction")."""
    if active_bank(session) is not None:  # never expected: a live succession has no bank beside it
        raise Conflict("bank_already_active", "A bank is active at this table.")
    bank = bank_services.open_bank_row(
        session=session,
        by=by,
        patron_id=patron_id,
        seat=seat,
        amount=amount,
        origin=origin,
        turn_seat=turn_seat,
    )
    succ.status, succ.new_bank, succ.ended_at, succ.ended_by = Succession.Status.TAKEN, bank, bank.opened_at, by
    succ.minimum = session.minimum  # the one the new bank was held to (it may have changed, §6)
    succ.save(update_fields=["status", "new_bank", "ended_at", "ended_by", "minimum"])
    audit(
        session,
        by,
        "succession.taken",
        succ,
        {
            "succession": succ.pk,
            "bank": bank.pk,
            "banker": patron_id,
            "seat_number": seat.seat_number,
            "amount": amount,
            "origin": origin,
            "turn_seat": {"old": succ.after_seat, "new": turn_seat},
            "cause": cause,
            "at": succ.ended_at.isoformat(),
            **why,
        },
    )
    return bank


# --------------------------------------------------------------------------- answering


@service_atomic
def offer_accept(*, succession: Succession, by: User, patron: Patron, amount: int) -> Succession:
    """The patron takes the bank at `amount` (RULES.md §5), if it is his turn and the amount
    is within the terms of his offer: a new bank from the table minimum (at most the
    maximum) after a loss; the whole bank all'altezza; an equal bank (chemmy-fi: a claim,
    won by the nearest claimant); domestic, at least the mandatory continuation, then from
    the minimum. The bank opens in the same transaction (origin succession)."""
    return _answer(succession, by, patron, accept=True, amount=amount)


@service_atomic
def offer_pass(*, succession: Succession, by: User, patron: Patron) -> Succession:
    """The patron declines ("passe"); the right passes to the next in turn."""
    return _answer(succession, by, patron, accept=False, amount=None)


def _answer(
    succession: Succession, by: User, patron: Patron, *, accept: bool, amount: int | None
) -> Succession:
    session = lock_session(succession.session_id, by)
    profile = profile_of(session)
    succ = _lock_succession(succession.pk)
    _require_offering(succ)
    _check_holder(session, succ, patron)
    if accept:
        _check_amount(amount)
    rows = _rows(succ)
    present = _present(session, succ, rows)
    if present.winner is not None or present.exhausted:
        # Departures alone decided it (chemmy-fi: the nearer players left, so a farther claim
        # wins; or nobody is left to ask): that is recorded and the answer is moot.
        return _settle(session, succ, profile, rows, present, by, cause="departure")
    # A new bank is at least today's minimum and at most today's maximum (§2.1, §6: the
    # Commissario may change them during play): the offers are on the terms in force
    # (_in_force), not those of when they were laid out, and are recorded with them.
    offers = present.offers
    with rule_errors():
        offer = rules.offer_of(offers, patron.pk)
        if accept and offer.round in rules.NEW_BANK_ROUNDS and offer in rules.current(offers):
            bank_services.check_bank_amount(session, amount)
        elif (
            accept and offer.round == rules.Round.HEIGHT and session.maximum is not None
            and offer in rules.current(offers)
        ):  # fmt: skip
            # domestic, at the height: the successor chooses his bank, from the mandatory
            # continuation up to the table maximum (§6: the house's maximum for the opening
            # bank); a continuation already above the maximum is taken at that floor.
            ceiling = offer.amount_max  # max(session.maximum, offer.amount_min): _in_force
            if type(amount) is int and ceiling is not None and amount > ceiling:
                raise ApplicationError(
                    "bank_above_maximum",
                    "The bank is above the table maximum.",
                    details={"amount": amount, "maximum": ceiling},
                )
        answer = rules.respond(offers, offer.order, accept=accept, amount=amount)
    changes = _save(rows, answer.offers, by)
    action = "succession.offer_passed"
    if accept:
        action = (
            "succession.offer_claimed" if offer.round == rules.Round.CLAIM else "succession.offer_accepted"
        )
    audit(
        session,
        by,
        action,
        succ,
        {
            "succession": succ.pk,
            "patron": patron.pk,
            "order": offer.order,
            "round": str(offer.round),
            "amount": amount,
            "changes": changes,
            "turn": [o.key for o in rules.current(answer.offers)],
        },
    )
    return _settle(session, succ, profile, rows, answer, by, cause="answer")


def _settle(
    session: TableSession,
    succ: Succession,
    profile: Profile,
    rows: list[SuccessionOffer],
    answer: rules.Answer,
    by: User,
    *,
    cause: str,
) -> Succession:
    """After an answer, a departure or the resumption of play (`cause`: "answer",
    "departure", "resume", written on every event this writes, whose actor is `by`): the
    winner opens his bank, or nobody wants it, or the next speaks."""
    changes = _save(rows, answer.offers, by)
    if changes:
        data = {"succession": succ.pk, "changes": changes, "cause": cause}
        audit(session, by, "succession.offers_skipped", succ, data)
    winner = answer.winner
    if winner is not None:
        won = next(r for r in rows if r.order == winner.order)
        _take(
            session,
            succ,
            by,
            patron_id=winner.key,
            seat=won.seat,
            amount=winner.amount,
            origin=Bank.Origin.SUCCESSION,
            turn_seat=rules.turn_after(profile, answer.offers, winner, previous_turn=succ.after_seat),
            cause=cause,
            why={"order": winner.order, "round": str(winner.round)},
        )
    elif answer.exhausted:
        _exhausted(session, succ, profile, by, cause=cause)
    return succ


def succession_departure(*, session: TableSession, by: User) -> Succession | None:
    """A player has left the table or been barred (the caller holds the session's lock and
    made the change in this transaction): a bank being offered in turn does not wait for
    him. His turn is skipped and a claim he made withdrawn, on record, at once; that may
    give the bank to the next claimant, or leave nobody to ask (the asta, or the succession
    lapses). An auction already open is left alone: its close passes over his bid.

    While play is interrupted (RULES.md §6) nobody takes a bank: offer_accept, bank_open and
    the asta refuse, and so does this. The skips are recorded now, but what they decide
    waits for the resumption (succession_resume), so the succession stays offering; the
    event says so (`deferred`: "session_interrupted")."""
    succ = _live(session)
    if succ is None or succ.status != Succession.Status.OFFERING:
        return succ
    profile = profile_of(session)
    rows = _rows(succ)
    if session.is_open:
        return _settle(session, succ, profile, rows, _present(session, succ, rows), by, cause="departure")
    withdrawn = _withdrawn(session, rows)
    changes = _save(rows, withdrawn, by)
    if changes:
        pending = rules.decide(withdrawn)
        deferred = {"deferred": f"session_{session.status}"} if pending.winner or pending.exhausted else {}
        audit(
            session,
            by,
            "succession.offers_skipped",
            succ,
            {"succession": succ.pk, "changes": changes, "cause": "departure", **deferred},
        )
    return succ


def succession_resume(*, session: TableSession, by: User) -> Succession | None:
    """Play resumes (tables.session_resume, the floor's after-resume hook: inside
    table_session_resume's transaction, the session locked and open again). What departures
    decided while it was interrupted (succession_departure) is decided now: the claim that
    won takes the bank, or nobody is left to ask (the asta, or the succession lapses), with
    `by` the one who resumed play and the cause "resume". Nothing to do otherwise."""
    succ = _live(session)
    if succ is None or succ.status != Succession.Status.OFFERING:
        return succ
    rows = _rows(succ)
    present = _present(session, succ, rows)
    return _settle(session, succ, profile_of(session), rows, present, by, cause="resume")


# --------------------------------------------------------------------------- the auction


_LIVE = Prepared(
    lambda session_id: Succession.objects.select_for_update(of=("self",))
    .select_related("previous_bank")
    .filter(session_id=session_id, status__in=Succession.LIVE)
    .order_by("pk")[:1]
)


def _live(session: TableSession) -> Succession | None:
    """The session's live succession, locked (one query; the session lock is held)."""
    return _LIVE.first(session.pk)


@service_atomic
def auction_open(*, session: TableSession, by: User) -> Auction:
    """Put the bank up for auction (asta, RULES.md §5) when nobody took it in turn: every
    seated player has answered, nobody has claimed it; standing players who did not speak
    lose their turn to the auction. Once per succession; venezia, classic and chemmy-fi."""
    session = _lock_floor(session.pk, by)
    profile = profile_of(session)
    if not rules.auction_allowed(profile):
        raise ApplicationError(
            "auction_not_in_profile",
            "This table's profile does not auction the bank.",
            details={"profile": profile.name},
        )
    succ = _live(session)
    if succ is None:
        raise Conflict("no_succession", "No bank is waiting for a successor at this table.")
    if succ.status == Succession.Status.AUCTION:
        raise Conflict(
            "auction_already_open", "The bank is at auction already.", details={"succession": succ.pk}
        )
    rows = _rows(succ)
    present = _present(session, succ, rows)
    if present.winner is not None:  # a claim decided by a departure: the bank is taken, no auction
        raise Conflict(
            "bank_claimed", "A player has claimed the bank.", details={"patron": present.winner.key}
        )
    with rule_errors():
        offers = rules.to_auction(present.offers)
    changes = _save(rows, offers, by)
    auction = Auction.objects.create(session=session, succession=succ, opened_at=now(), opened_by=by)
    succ.status = Succession.Status.AUCTION
    succ.save(update_fields=["status"])
    audit(
        session,
        by,
        "auction.opened",
        auction,
        {
            "auction": auction.pk,
            "succession": succ.pk,
            "minimum": session.minimum,
            "maximum": session.maximum,
            "after_seat": succ.after_seat,
            "changes": changes,
            "at": auction.opened_at.isoformat(),
        },
    )
    return auction


def _lock_auction(auction: Auction, session_lock) -> tuple[TableSession, Succession, Auction]:
    session_id, succession_id = Auction.objects.values_list("session_id", "succession_id").get(pk=auction.pk)
    session = session_lock(session_id)
    succ = _lock_succession(succession_id)
    locked = Auction.objects.select_for_update(of=("self",)).get(pk=auction.pk)
    if locked.status != Auction.Status.OPEN:
        raise Conflict(
            "auction_closed",
            "The auction is closed.",
            details={"auction": locked.pk, "winning_bid": locked.winning_bid_id},
        )
    return session, succ, locked


@service_atomic
def auction_bid(*, auction: Auction, by: User, patron: Patron, amount: int) -> Bid:
    """Record a bid: seated or standing alike (§5), at least the table minimum, at most the
    maximum, and not below the best bid so far; an equal bid is recorded (the close settles
    ties). Bids get their seq (1, 2, ...) under the auction's lock: a definite order."""
    session, succ, auction = _lock_auction(auction, lambda pk: lock_session(pk, by))
    profile_of(session)
    seat = _check_holder(session, succ, patron)
    # The best bid that still stands (rules.bid_void): one that cannot win (its bidder left or
    # was barred, or it is outside today's limits) does not hold the others up.
    standing = (
        Bid.objects.filter(auction=auction, amount__gte=session.minimum)
        .filter(Exists(Seat.objects.filter(session_id=session.pk, patron_id=OuterRef("patron_id"), left_at=None)))
        .exclude(patron_id__in=FauxTirageBar.objects.filter(session_id=session.pk).values("patron_id"))
    )
    if session.maximum is not None:
        standing = standing.filter(amount__lte=session.maximum)
    best = standing.aggregate(m=Max("amount"))["m"]
    refused = rules.bid_refused(amount, minimum=session.minimum, maximum=session.maximum, best=best)
    if refused is not None:
        code, message = refused
        raise ApplicationError(
            code,
            message,
            details={"amount": amount, "minimum": session.minimum, "maximum": session.maximum, "best": best},
        )
    auction.bids_count += 1
    auction.save(update_fields=["bids_count"])
    bid = Bid.objects.create(
        auction=auction,
        seq=auction.bids_count,
        patron=patron,
        seat=seat,
        seat_number=seat.seat_number,
        standing=seat.standing,
        amount=amount,
        at=now(),
        by=by,
    )
    audit(
        session,
        by,
        "auction.bid",
        bid,
        {
            "auction": auction.pk,
            "seq": bid.seq,
            "patron": patron.pk,
            "amount": amount,
            "seat_number": seat.seat_number,
            "standing": seat.standing,
            "best_before": best,
            "at": bid.at.isoformat(),
        },
    )
    return bid


@service_atomic
def auction_close(*, auction: Auction, by: User) -> Auction:
    """Close the auction (explicitly, RULES.md §5): the highest bid wins; equal highest, the
    seated player, then the nearest in rotation from the outgoing banker, then (standing)
    the first to bid. A bidder who has left the table or been barred since does not win.
    The winning bid becomes the new bank (origin auction); no bid: the succession lapses."""
    session, succ, auction = _lock_auction(auction, lambda pk: _lock_floor(pk, by))
    profile = profile_of(session)
    bids = list(Bid.objects.filter(auction=auction).select_related("seat").order_by("seq"))
    barred = set(FauxTirageBar.objects.filter(session=session).values_list("patron_id", flat=True))
    places = {
        s.patron_id: s
        for s in Seat.objects.filter(
            session=session, left_at__isnull=True, patron_id__in={b.patron_id for b in bids}
        )
    }
    voided = rules.bids_void(
        ((b.seq, b.patron_id, b.amount) for b in bids),
        present=places, barred=barred, minimum=session.minimum, maximum=session.maximum,
    )  # fmt: skip
    candidates = [rules.Bid(b.patron_id, b.amount, b.seat_number, b.seq, not voided[b.seq]) for b in bids]
    with rule_errors():
        win = rules.auction_winner(
            candidates, after=succ.after_seat, rotation=profile.rotation, table_seats=session.table.seats
        )
    ranking = sorted(
        candidates,
        key=lambda b: rules.bid_rank(
            b, after=succ.after_seat, rotation=profile.rotation, table_seats=session.table.seats
        ),
    )
    winning = None if win is None else next(b for b in bids if b.seq == win.seq)
    auction.status, auction.closed_at, auction.closed_by = Auction.Status.CLOSED, now(), by
    auction.winning_bid = winning
    auction.save(update_fields=["status", "closed_at", "closed_by", "winning_bid"])
    audit(
        session,
        by,
        "auction.closed",
        auction,
        {
            "auction": auction.pk,
            "succession": succ.pk,
            "bids": len(bids),
            "ranking": [
                {
                    "seq": b.seq,
                    "patron": b.key,
                    "amount": b.amount,
                    "seat_number": b.seat_number,
                    "eligible": b.eligible,
                    **({"void": voided[b.seq]} if voided[b.seq] else {}),
                }
                for b in ranking
            ],
            "minimum": session.minimum,
            "maximum": session.maximum,
            "winning_bid": None if winning is None else winning.pk,
            "winner": None if win is None else win.key,
            "at": auction.closed_at.isoformat(),
        },
    )
    if win is None:  # no bid, or none that stands
        _lapse(session, succ, by, "no_valid_bids" if bids else "no_bids", auction=auction.pk)
        return auction
    _take(
        session,
        succ,
        by,
        patron_id=win.key,
        seat=places[win.key],
        amount=win.amount,
        origin=Bank.Origin.AUCTION,
        turn_seat=rules.turn_after_auction(win, previous_turn=succ.after_seat),
        cause="auction",
        why={"auction": auction.pk, "bid": winning.pk, "seq": win.seq},
    )
    return auction


# --------------------------------------------------------------------------- the other ways a succession ends


def succession_give_way(*, session: TableSession, by: User, patron: Patron) -> Succession | None:
    """bank_open while a succession is live: the Capo Partita enters the new bank himself
    (a table's own agreement, a Direzione decision, §6). The succession lapses, recorded
    with who took the bank; never while an auction is open (its bids bind). Locks held.
    Returns the lapsed succession. No link to the bank is stored: the report finds the bank
    entered directly as the one that follows the succession's previous bank."""
    succ = _live(session)
    if succ is None:
        return None
    if succ.status == Succession.Status.AUCTION:
        raise Conflict(
            "auction_in_progress",
            "The bank is at auction: close the auction.",
            details={"succession": succ.pk, "auction": Auction.objects.get(succession=succ).pk},
        )
    if patron.pk == succ.outgoing_banker_id:
        # §5: the bank passes; the outgoing banker is never offered his own bank, and a
        # direct entry is not a way round that while the succession is live.
        raise ApplicationError(
            "outgoing_banker",
            "The outgoing banker does not take his own bank back.",
            details={"succession": succ.pk, "patron": patron.pk},
        )
    _lapse(session, succ, by, "bank_opened_directly", patron=patron.pk)
    return succ


def succession_end_for_session_close(*, session: TableSession, by: User) -> Succession | None:
    """The session closed (bank_end_for_session_close): a live succession lapses and its
    open auction closes with no winner. Locks held; safe to call twice."""
    succ = _live(session)
    if succ is None:
        return None
    auction = Auction.objects.select_for_update(of=("self",)).filter(succession=succ, status="open").first()
    if auction is not None:
        auction.status, auction.closed_at, auction.closed_by = Auction.Status.CLOSED, now(), by
        auction.save(update_fields=["status", "closed_at", "closed_by"])
        audit(
            session,
            by,
            "auction.closed",
            auction,
            {"auction": auction.pk, "succession": succ.pk, "winning_bid": None, "reason": "session_closed",
             "at": auction.closed_at.isoformat()},
        )
    _lapse(session, succ, by, "session_closed")
    return succ
