"""Passing the bank and the auction (RULES.md §5): who is offered the bank, in which order,
on which terms, who has the right to answer now, who wins an auction, and where the
rotation stands afterwards. Pure Python: no Django import, ever (ARCHITECTURE.md).

Vocabulary of this module

- A *place* is a patron at the table: a seat number, or None when standing (in piedi).
- The *turn seat* of a bank is the seat whose turn in the rotation that bank holds: the
  banker's own seat, except for a standing banker (he has no seat: the turn stays where
  it was) and a domestic distant successor (seed 002: he "does not steal the immediate
  neighbour's normal turn"). The next succession starts with the seat after it. It is the
  table's *rotation pointer*.
- A succession lays out, when the bank ends, the whole list of *offers* in the order the
  players have the right to the bank, each in a *round* with its terms (the amounts the
  bank may be taken at). Laying it out at once lets an auditor replay who had the right
  and why; the rounds say who may answer now:
    * sequential rounds (new_bank, seated, height, minimum): one player at a time, in order;
    * standing: every standing player at once, the first to accept wins ("parla per primo");
    * claim (chemmy-fi): every player at once, and the nearest in turn among those who
      claimed wins, as soon as every nearer player has passed.

Direction. Every profile passes the bank to the outgoing banker's right (§3.2: venezia
"next seat in increasing seat order", classic "counter-clockwise", domestic "to the
right", chemmy-fi "to the next player"). Seen from above, the neighbour on a player's
right is the next one counter-clockwise, and the seats are numbered that way (seed 001:
the hand passes to the next seat; the seguito starts from the one seated to the right of
the outgoing banker), so all four are increasing seat numbers, as the betting order in
engine.live.turn_rank. A table numbered the other way round would be one more STEP entry.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from .errors import EngineError
from .profiles import Continuation, Profile, Rotation
from .profiles import Succession as SuccessionRule

STEP: dict[Rotation, int] = {
    Rotation.INCREASING: 1,
    Rotation.COUNTER_CLOCKWISE: 1,
    Rotation.RIGHT: 1,
    Rotation.NEXT: 1,
}


class Reason(StrEnum):
    LOST = "lost"
    WITHDRAWN = "withdrawn"


class Kind(StrEnum):
    ROTATION = "rotation"  # after a loss: next in rotation opens a new bank >= minimum (all profiles)
    ALL_ALTEZZA = "all_altezza"  # venezia/classic withdrawal: whole amount, seated in order, then standing
    EQUAL_BANK = "equal_bank"  # chemmy-fi withdrawal: an equal bank, nearest in turn among claimants
    CONTINUATION = "continuation"  # domestic withdrawal: >= the mandatory continuation, then from the minimum


class Round(StrEnum):
    NEW_BANK = "new_bank"  # ROTATION
    SEATED = "seated"  # ALL_ALTEZZA, first
    STANDING = "standing"  # ALL_ALTEZZA, then
    CLAIM = "claim"  # EQUAL_BANK
    HEIGHT = "height"  # CONTINUATION, first
    MINIMUM = "minimum"  # CONTINUATION, then: the neighbour (then the next) may open from the minimum


SEQUENTIAL = frozenset({Round.NEW_BANK, Round.SEATED, Round.HEIGHT, Round.MINIMUM})
# Rounds that open a new bank: the table maximum applies (§6: "a maximum for the opening
# bank"). The others take over the outgoing bank at its height, a continuation of the mano.
NEW_BANK_ROUNDS = frozenset({Round.NEW_BANK, Round.MINIMUM})


class Status(StrEnum):
    PENDING = "pending"  # not answered yet (whether it is his turn: `current`)
    ACCEPTED = "accepted"  # took the bank
    CLAIMED = "claimed"  # chemmy-fi: wants it; wins when every nearer player has passed
    PASSED = "passed"  # declined ("passe")
    SKIPPED = "skipped"  # never had to answer: see `reason`


class Skip(StrEnum):
    BARRED = "barred"  # barred from holding the cards (faux tirage, §4)
    LEFT = "left"  # left the table (or changed place) before his turn
    TAKEN = "taken"  # someone else took the bank first
    OUTRANKED = "outranked"  # chemmy-fi: claimed, but a nearer player claimed too
    AUCTION = "auction"  # nobody spoke; the auction opened
    LAPSED = "lapsed"  # the succession ended before his turn (a bank entered directly, the close)


ANSWERED = frozenset({Status.ACCEPTED, Status.CLAIMED, Status.PASSED, Status.SKIPPED})


@dataclass(frozen=True)
class Place:
    key: Hashable  # the patron
    seat_number: int | None  # None: standing
    eligible: bool = True  # False: barred from holding the cards


@dataclass(frozen=True)
class Offer:
    order: int  # 1, 2, ... the order of the right to the bank
    round: Round
    key: Hashable
    seat_number: int | None
    amount_min: int
    amount_max: int | None  # None: no bound here (the table maximum, for a new bank)
    status: Status = Status.PENDING
    reason: str = ""  # why skipped
    amount: int | None = None  # the amount accepted or claimed

    @property
    def standing(self) -> bool:
        return self.seat_number is None


@dataclass(frozen=True)
class Answer:
    offers: tuple[Offer, ...]
    winner: Offer | None  # the offer that takes the bank, if decided now
    exhausted: bool  # every offer answered and nobody took the bank


# --------------------------------------------------------------------------- rotation


def _step(rotation: Rotation | str) -> int:
    try:
        return STEP[Rotation(rotation)]
    except (KeyError, ValueError):
        raise EngineError("no_succession", f"the bank does not pass under rotation {rotation!r}") from None


def distance(
    seat_number: int | None, *, after: int | None, rotation: Rotation | str, table_seats: int
) -> int:
    """How far a place is in the rotation from the seat after which it starts: 1 for the
    neighbour, ... table_seats for `after` itself; standing players come after every seat."""
    step = _step(rotation)
    if seat_number is None:
        return table_seats + 1
    if after is None:
        return seat_number if step > 0 else table_seats + 1 - seat_number
    return ((seat_number - after) * step - 1) % table_seats + 1


def rotation_order(
    places: Iterable[Place], *, after: int | None, rotation: Rotation | str, table_seats: int
) -> list[Place]:
    """The seated places in the order the bank passes, starting with the one after `after`."""
    seated = [p for p in places if p.seat_number is not None]
    return sorted(
        seated, key=lambda p: distance(p.seat_number, after=after, rotation=rotation, table_seats=table_seats)
    )


def next_seat(
    seat_numbers: Iterable[int], *, after: int | None, rotation: Rotation | str, table_seats: int
) -> int | None:
    """The first occupied seat after `after`, the one the bank goes to first when it passes."""
    seats = sorted(
        (s for s in seat_numbers if s is not None and s != after),
        key=lambda s: distance(s, after=after, rotation=rotation, table_seats=table_seats),
    )
    return seats[0] if seats else None


def first_bank_seat(
    seated: Mapping[int, Hashable],
    *,
    first_seat: int,
    rotation: Rotation | str,
    table_seats: int,
    declined: Iterable[Hashable] = (),
) -> int | None:
    """The seat whose turn it is for a session's first bank (RULES.md §6: "the hand begins
    with the player at seat 1 as banker"; §5: each may accept or decline, "passe"): the first
    occupied seat from the profile's first banker seat (itself first) in the profile's
    rotation order, skipping the players who declined it (or may not take it). `seated`:
    seat number -> player. None when every seated player has declined."""
    try:
        step = _step(rotation)
    except EngineError:  # a bank that never passes (punto banco): increasing seat order
        step = 1
    before = (first_seat - 1 - step) % table_seats + 1  # the seat the rotation reaches first_seat from
    out = set(declined)
    order = sorted(
        (n for n in seated if n is not None),
        key=lambda n: ((n - before) * step - 1) % table_seats,
    )
    return next((n for n in order if seated[n] not in out), None)


# --------------------------------------------------------------------------- laying out the offers


def kind_for(profile: Profile, reason: Reason | str) -> Kind:
    """RULES.md §5: after a loss the next in rotation opens a new bank; after a withdrawal
    the profile's succession (seguito all'altezza, an equal bank, the domestic continuation)."""
    if profile.succession == SuccessionRule.NONE or profile.rotation == Rotation.NONE:
        raise EngineError("no_succession", f"the bank does not pass in profile {profile.name!r}")
    if Reason(reason) == Reason.LOST:
        return Kind.ROTATION
    return {
        SuccessionRule.VENEZIA: Kind.ALL_ALTEZZA,
        SuccessionRule.CHEMMY_FI: Kind.EQUAL_BANK,
        SuccessionRule.DOMESTIC: Kind.CONTINUATION,
    }[profile.succession]


def auction_allowed(profile: Profile) -> bool:
    """venezia and classic (§5, seed 001) and chemmy-fi (seed 003) auction the bank that
    nobody takes; domestic does not (seed 002: the neighbour may open from the minimum)."""
    return profile.succession in (SuccessionRule.VENEZIA, SuccessionRule.CHEMMY_FI)


def continuation_floor(
    profile: Profile, *, bank_amount: int, last_winner: str | None, last_covered: int
) -> int:
    """The mandatory continuation of the outgoing bank (§4): what the banker himself would
    have had to put up. domestic: 2S after a win, S after a tie; else the whole bank."""
    if profile.continuation == Continuation.AT_LEAST_DOUBLE_STAKE:
        return 2 * last_covered if last_winner == "banker" else last_covered
    return bank_amount


def build_offers(
    kind: Kind | str,
    *,
    places: Sequence[Place],
    outgoing: Hashable,
    after: int | None,
    rotation: Rotation | str,
    table_seats: int,
    minimum: int,
    amount: int | None = None,
    floor: int | None = None,
) -> tuple[Offer, ...]:
    """Every offer of a succession, in the order of the right to the bank.

    `places` are the patrons at the table (standing ones in the order they registered);
    `outgoing` (the banker whose bank ended) is never offered his own bank; a barred
    player's offers are laid out SKIPPED (reason barred) so the record says why he was
    passed over. `amount` is the outgoing bank (all_altezza, equal_bank); `floor` the
    mandatory continuation (continuation)."""
    kind = Kind(kind)
    others = [p for p in places if p.key != outgoing]
    seated = rotation_order(others, after=after, rotation=rotation, table_seats=table_seats)
    standing = [p for p in others if p.seat_number is None]
    rounds: list[tuple[Round, list[Place], int, int | None]]
    if kind == Kind.ROTATION:
        rounds = [(Round.NEW_BANK, seated, minimum, None)]
    elif kind in (Kind.ALL_ALTEZZA, Kind.EQUAL_BANK):
        if amount is None or amount <= 0:
            raise EngineError(
                "bad_amount", "the bank offered all'altezza is a positive amount", amount=amount
            )
        if kind == Kind.ALL_ALTEZZA:
            rounds = [(Round.SEATED, seated, amount, amount), (Round.STANDING, standing, amount, amount)]
        else:
            rounds = [(Round.CLAIM, [*seated, *standing], amount, amount)]
    else:  # CONTINUATION: no spectators in the domestic game (seed 002): the seated only
        if floor is None:
            raise EngineError("bad_amount", "the domestic succession needs the mandatory continuation")
        rounds = [(Round.HEIGHT, seated, max(floor, minimum), None), (Round.MINIMUM, seated, minimum, None)]
    offers: list[Offer] = []
    for round_, members, low, high in rounds:
        for place in members:
            offers.append(
                Offer(
                    order=len(offers) + 1,
                    round=round_,
                    key=place.key,
                    seat_number=place.seat_number,
                    amount_min=low,
                    amount_max=high,
                    status=Status.PENDING if place.eligible else Status.SKIPPED,
                    reason="" if place.eligible else Skip.BARRED,
                )
            )
    return tuple(offers)


# --------------------------------------------------------------------------- answering


def current(offers: Sequence[Offer]) -> tuple[Offer, ...]:
    """The offers whose holders may answer now: the first pending one in a sequential round;
    every pending one in the standing or claim round once the rounds before are answered.
    Nothing once the bank is taken."""
    if any(o.status == Status.ACCEPTED for o in offers):
        return ()
    ordered = sorted(offers, key=lambda o: o.order)
    first = next((o for o in ordered if o.status == Status.PENDING), None)
    if first is None:
        return ()
    if first.round in SEQUENTIAL:
        return (first,)
    return tuple(o for o in ordered if o.round == first.round and o.status == Status.PENDING)


def claim_winner(offers: Sequence[Offer]) -> Offer | None:
    """chemmy-fi (seed 003): among those who put up an equal bank, the nearest in turn; he
    wins once every nearer player has passed (a nearer pending one may still claim)."""
    for offer in sorted(offers, key=lambda o: o.order):
        if offer.round != Round.CLAIM or offer.status in (Status.PASSED, Status.SKIPPED):
            continue
        return offer if offer.status == Status.CLAIMED else None
    return None


def in_terms(offer: Offer, amount: object) -> bool:
    return (
        type(amount) is int
        and amount >= offer.amount_min
        and (offer.amount_max is None or amount <= offer.amount_max)
    )


def offer_of(offers: Sequence[Offer], key: Hashable) -> Offer:
    """The offer a patron answers: his pending one in the current round, else his pending
    one (out of turn), else his last one (already answered)."""
    mine = sorted((o for o in offers if o.key == key), key=lambda o: o.order)
    if not mine:
        raise EngineError("not_offered", "this patron has no offer in this succession", patron=key)
    now = {o.order for o in current(offers)}
    for offer in mine:
        if offer.order in now:
            return offer
    pending = [o for o in mine if o.status == Status.PENDING]
    return pending[0] if pending else mine[-1]


def respond(offers: Sequence[Offer], order: int, *, accept: bool, amount: int | None = None) -> Answer:
    """Record one answer (RULES.md §5) and say whether the bank is now taken or nobody wants it."""
    by_order = {o.order: o for o in offers}
    if order not in by_order:
        raise EngineError("not_offered", "no such offer", order=order)
    offer = by_order[order]
    if offer.status != Status.PENDING:
        raise EngineError("offer_answered", "this offer was answered already", status=str(offer.status))
    if offer.order not in {o.order for o in current(offers)}:
        first = current(offers)
        raise EngineError(
            "not_your_turn",
            "another player has the right to the bank first",
            turn=[o.key for o in first],
        )
    if accept and not in_terms(offer, amount):
        raise EngineError(
            "amount_not_offered",
            "the bank is taken at the terms offered",
            amount=amount,
            amount_min=offer.amount_min,
            amount_max=offer.amount_max,
        )
    if accept:
        status = Status.CLAIMED if offer.round == Round.CLAIM else Status.ACCEPTED
        by_order[order] = replace(offer, status=status, amount=amount)
    else:
        by_order[order] = replace(offer, status=Status.PASSED)
    return _decide(tuple(by_order[k] for k in sorted(by_order)))


def _decide(offers: tuple[Offer, ...]) -> Answer:
    """After a change: the bank is taken (by an acceptance, or by the nearest claim once
    every nearer player has passed; the others are skipped), or nobody wants it, or not yet."""
    winner = next((o for o in offers if o.status == Status.ACCEPTED), None) or claim_winner(offers)
    if winner is not None:
        winner = replace(winner, status=Status.ACCEPTED)
        offers = tuple(
            winner
            if o.order == winner.order
            else replace(
                o, status=Status.SKIPPED, reason=Skip.OUTRANKED if o.status == Status.CLAIMED else Skip.TAKEN
            )
            if o.status in (Status.PENDING, Status.CLAIMED)
            else o
            for o in offers
        )
        return Answer(offers, winner, False)
    return Answer(offers, None, all(o.status in (Status.PASSED, Status.SKIPPED) for o in offers))


def withdraw(offers: Sequence[Offer], keys: Iterable[Hashable], reason: Skip) -> tuple[Offer, ...]:
    """Pending offers of patrons who left (or were barred) since the succession started are
    skipped: nobody waits for a player who is no longer there; a claim of theirs not yet
    decided is withdrawn likewise (he cannot hold the bank). Decides nothing (see `skip`)."""
    gone = set(keys)
    return tuple(
        replace(o, status=Status.SKIPPED, reason=reason)
        if o.status in (Status.PENDING, Status.CLAIMED) and o.key in gone
        else o
        for o in offers
    )


def decide(offers: Sequence[Offer]) -> Answer:
    """Whether the offers as they stand give the bank to someone (an acceptance, or the
    nearest claim once every nearer player has passed or been skipped), or nobody is left
    to ask, or not yet."""
    return _decide(tuple(offers))


def skip(offers: Sequence[Offer], keys: Iterable[Hashable], reason: Skip) -> Answer:
    """`withdraw`, then `decide`: the skipped turns may decide a claim, or leave nobody."""
    return _decide(withdraw(offers, keys, reason))


def to_auction(offers: Sequence[Offer]) -> tuple[Offer, ...]:
    """The bank goes to auction when nobody takes it (§5). Every sequential offer must have
    been answered (the seated have their right first) and nobody may have claimed it; the
    standing and claim rounds, where the first to speak wins, end with the auction."""
    if any(o.status in (Status.ACCEPTED, Status.CLAIMED) for o in offers):
        raise EngineError("bank_claimed", "a player has taken or claimed the bank")
    waiting = [o for o in offers if o.status == Status.PENDING and o.round in SEQUENTIAL]
    if waiting:
        raise EngineError(
            "offers_pending",
            "the bank is still offered in turn: every seated player answers first",
            turn=[o.key for o in current(offers)],
        )
    return tuple(
        replace(o, status=Status.SKIPPED, reason=Skip.AUCTION) if o.status == Status.PENDING else o
        for o in offers
    )


def neighbour(offers: Sequence[Offer], round_: Round | str) -> Offer | None:
    """The immediate neighbour in a round: the first offer not skipped for being barred."""
    return next(
        (o for o in sorted(offers, key=lambda o: o.order) if o.round == round_ and o.reason != Skip.BARRED),
        None,
    )


def turn_after(
    profile: Profile, offers: Sequence[Offer], winner: Offer, *, previous_turn: int | None
) -> int | None:
    """The rotation pointer once `winner` takes the bank (the new bank's turn seat).

    The bank's turn follows the new banker (his seat), except: a standing banker holds no
    seat (the pointer stays); domestic (seed 002), a successor at the height who is not the
    immediate neighbour keeps the neighbour's normal turn (the pointer stays, so when he
    loses the bank is offered to that neighbour first)."""
    if winner.seat_number is None:
        return previous_turn
    if profile.succession == SuccessionRule.DOMESTIC and winner.round == Round.HEIGHT:
        near = neighbour(offers, Round.HEIGHT)
        if near is None or near.order != winner.order:
            return previous_turn
    return winner.seat_number


# --------------------------------------------------------------------------- the auction


@dataclass(frozen=True)
class Bid:
    key: Hashable  # the patron
    amount: int
    seat_number: int | None  # None: standing
    seq: int  # order of arrival, 1, 2, ...
    eligible: bool = True  # False: left the table or barred before the close


def bid_refused(
    amount: object, *, minimum: int, maximum: int | None, best: int | None
) -> tuple[str, str] | None:
    """(code, message) refusing a bid, or None: a bid is a whole amount, at least the table
    minimum, at most the maximum, and not below the best bid so far (an equal bid stands:
    ties are settled at the close)."""
    if type(amount) is not int or amount <= 0:
        return "bad_amount", "A bid is a positive whole number of cents."
    if amount < minimum:
        return "bid_below_minimum", "A bid is at least the table minimum."
    if maximum is not None and amount > maximum:
        return "bid_above_maximum", "A bid is at most the table maximum."
    if best is not None and amount < best:
        return "bid_below_best", "A bid is at least the best bid so far."
    return None


def bid_void(*, amount: int, present: bool, barred: bool, minimum: int, maximum: int | None) -> str:
    """Why a bid no longer stands ("" when it does): its bidder has left the table or been
    barred from holding the cards, or it is outside the limits in force now (the Commissario
    may change them during play, §6; a new bank is at least the minimum, at most the
    maximum). A bid that does not stand cannot win, nor hold up lower bids."""
    if not present:
        return "left"
    if barred:
        return "barred"
    if amount < minimum:
        return "below_minimum"
    if maximum is not None and amount > maximum:
        return "above_maximum"
    return ""


def bids_void(
    bids: Iterable[tuple[Hashable, Hashable, int]],
    *,
    present: Container[Hashable],
    barred: Container[Hashable],
    minimum: int,
    maximum: int | None,
) -> dict[Hashable, str]:
    """bid_void for each of `bids` (key, bidder, amount): {key: why it no longer stands}."""
    return {
        key: bid_void(
            amount=amount, present=bidder in present, barred=bidder in barred, minimum=minimum, maximum=maximum
        )
        for key, bidder, amount in bids
    }


def bid_rank(
    bid: Bid, *, after: int | None, rotation: Rotation | str, table_seats: int
) -> tuple[int, int, int, int]:
    """Lower is better: the highest amount; among equals the seated player; then the nearest
    in rotation from the outgoing banker's turn; then (standing) the first to speak."""
    return (
        -bid.amount,
        bid.seat_number is None,
        distance(bid.seat_number, after=after, rotation=rotation, table_seats=table_seats),
        bid.seq,
    )


def auction_winner(
    bids: Sequence[Bid], *, after: int | None, rotation: Rotation | str, table_seats: int
) -> Bid | None:
    """The winning bid (RULES.md §5): highest; equal highest: seated before standing, then
    the nearest in rotation from the outgoing banker; standing ties: the first to bid."""
    eligible = [b for b in bids if b.eligible]
    if not eligible:
        return None
    return min(eligible, key=lambda b: bid_rank(b, after=after, rotation=rotation, table_seats=table_seats))


def turn_after_auction(winner: Bid, *, previous_turn: int | None) -> int | None:
    """The bank's turn follows the auction's winner to his seat; standing, it stays."""
    return previous_turn if winner.seat_number is None else winner.seat_number
