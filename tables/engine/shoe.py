"""The shoe (sabot) as a tracker of what has left it (RULES.md §1, §6 art. 58).

The engine never shuffles or deals: the cards are physical, the Capo Partita records
them. The tracker refuses what cannot happen (a rank+suit out more times than there are
decks, a card from an empty shoe) and tells the floor when the stop card is reached.

Model:
- `drawn` is every card taken out of the shoe, in order, whether played or voided at once.
- `voided` is the multiset of drawn cards that went to the sibilla as void: a card seen
  face up in the sabot or dropped (`void`, which also takes it out of the shoe), or a card
  drawn in a coup that its reconstruction did not use (`void_drawn`, already out).
- Burn (profile `chemmy-fi`, RULES.md §1): the burned cards are moved under the pack, so
  they stay physically in the shoe but are never dealt; the face-up one is known and
  counts for rank+suit integrity (unseen ones are recorded as None). The stop position
  is therefore never above the burned cards: reaching them ends the shoe. The face-up one
  is put aside unused; the coup in play is finished with the six under it (seed 003).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from .cards import ALL_CARDS, Card, parse_card
from .errors import EngineError
from .profiles import Profile

CARDS_PER_DECK = 52
_CANONICAL = frozenset(ALL_CARDS)


class Shoe:
    __slots__ = ("_out", "burn_cards", "burned", "decks", "drawn", "stop_card_from_end", "voided")

    def __init__(self, decks: int = 6, *, burn_cards: int = 0, stop_card_from_end: int = 7):
        if type(decks) is not int or decks < 1:
            raise EngineError("bad_shoe", f"decks must be a positive integer, got {decks!r}", decks=decks)
        if (
            type(burn_cards) is not int
            or burn_cards < 0
            or type(stop_card_from_end) is not int
            or stop_card_from_end < 0
        ):
            raise EngineError("bad_shoe", "burn_cards and stop_card_from_end must be integers >= 0")
        self.decks = decks
        self.burn_cards = burn_cards
        self.stop_card_from_end = stop_card_from_end
        self.drawn: list[Card] = []
        self.voided: list[Card] = []
        self.burned: list[Card | None] = []
        self._out: Counter[Card] = Counter()  # rank+suit -> times known out of play

    @classmethod
    def for_profile(cls, profile: Profile, decks: int | None = None) -> Shoe:
        decks = profile.decks if decks is None else decks
        if decks not in profile.allowed_decks:
            raise EngineError(
                "bad_shoe",
                f"profile {profile.name} allows {profile.allowed_decks} decks, not {decks}",
                decks=decks,
            )
        return cls(decks, burn_cards=profile.burn_cards, stop_card_from_end=profile.stop_card_from_end)

    # -- counts ------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.decks * CARDS_PER_DECK

    @property
    def cards_left(self) -> int:
        """Cards physically still in the shoe (the burned cards under the pack included)."""
        return self.size - len(self.drawn)

    @property
    def dealable(self) -> int:
        """Cards that can still be dealt before the burned ones under the pack are reached."""
        return max(0, self.cards_left - len(self.burned))

    @property
    def _takeable(self) -> int:
        """Cards that can still come out. The face-up burned card is put aside unused when it
        is reached; the coup in play is then finished with the cards under it (RULES.md §1:
        "when that card is reached the current coup is finished"; seed 003: "the remaining
        six cards suffice"). No further coup is dealt: the stop card is reached (stop_at)."""
        return self.cards_left - (1 if self.burned else 0)

    @property
    def stop_at(self) -> int:
        # Art. 58: the stop card stands before the last N cards; with a burn the face-up
        # burned card plays the same part (RULES.md §1), so the higher of the two counts.
        return max(self.stop_card_from_end, self.burn_cards)

    @property
    def stop_card_reached(self) -> bool:
        """True once cards_left <= the stop position: the current coup ends, no new coup is dealt."""
        return self.cards_left <= self.stop_at

    def times_out(self, card: Card) -> int:
        return self._out[parse_card(card)]

    # -- movements ---------------------------------------------------------------------
    def _take(self, card: object) -> Card:
        code = parse_card(card)
        if self._takeable <= 0:
            raise EngineError("shoe_empty", f"no card left to deal for {code}", card=code)
        under = self._under_face_up()
        if under is not None:
            # A burned card under the face-up one, finishing the coup in play. Recorded at the
            # burn, it was counted out then: it must be that card, and is not counted twice.
            if code != under:
                raise EngineError(
                    "burned_card_mismatch",
                    f"the next card under the face-up burned card was recorded as {under}, not {code}",
                    card=code,
                    burned=under,
                )
            self.drawn.append(code)
            return code
        if self._out[code] >= self.decks:
            raise EngineError(
                "card_exhausted",
                f"{code} has already come out {self._out[code]} times from a {self.decks}-deck shoe",
                card=code,
                decks=self.decks,
            )
        self._out[code] += 1
        self.drawn.append(code)
        return code

    def _under_face_up(self) -> Card | None:
        """The burned card recorded at the next position when that position is under the
        face-up burned card (None: above it, or not recorded at the burn)."""
        if not self.burned:
            return None
        k = len(self.burned) + 1 - self.cards_left  # 1.. once the face-up card is reached
        return self.burned[k] if 1 <= k < len(self.burned) else None

    def draw(self, card: object) -> Card:
        """Record a card dealt from the shoe; returns its canonical code."""
        return self._take(card)

    def draw_many(self, cards: Iterable[object]) -> list[Card]:
        """Record several cards; all or nothing (the state is unchanged on error)."""
        snapshot = self.to_dict()
        try:
            return [self._take(card) for card in cards]
        except EngineError:
            self._restore(snapshot)
            raise

    def void(self, card: object) -> Card:
        """A card seen face up in the sabot, or dropped: out of the shoe, to the sibilla (§1)."""
        code = self._take(card)
        self.voided.append(code)
        return code

    def void_drawn(self, card: object) -> Card:
        """Mark a card already drawn as void (a card the reconstruction did not use, §3.3)."""
        code = parse_card(card)
        if self.drawn.count(code) <= self.voided.count(code):
            raise EngineError("card_not_drawn", f"{code} was not drawn from this shoe", card=code)
        self.voided.append(code)
        return code

    def correct(self, position: int, was: object, card: object) -> Card:
        """The card recorded at `position` (1-based, shoe order) as `was` was misread: it is
        `card`. The same physical card, so the count out of the shoe is unchanged; the shoe
        is checked as if `card` had been recorded there (card_exhausted, burned_card_mismatch,
        as when it is drawn), all or nothing. `card_not_drawn`: no `was` at that position."""
        was_code, code = parse_card(was), parse_card(card)
        if type(position) is not int or not 1 <= position <= len(self.drawn) or self.drawn[position - 1] != was_code:
            raise EngineError(
                "card_not_drawn",
                f"{was_code} is not the card at position {position}",
                card=was_code,
                position=position,
            )
        data = self.to_dict()
        data["drawn"][position - 1] = code
        other = Shoe.from_dict(data)  # every movement replayed: refused as the draw would be
        self.drawn, self.voided, self._out = other.drawn, other.voided, other._out
        return code

    def burn(self, cards: Sequence[object | None]) -> list[Card | None]:
        """Record the burn after the shuffle: exactly `burn_cards` cards, None for the unseen ones."""
        if self.burn_cards == 0:
            raise EngineError("no_burn", "this profile burns no card")
        if self.burned:
            raise EngineError("already_burned", "the cards of this shoe were already burned")
        if self.drawn:
            raise EngineError("burn_after_draw", "the burn comes right after the shuffle, before any card")
        if len(cards) != self.burn_cards:
            raise EngineError(
                "bad_burn",
                f"burn exactly {self.burn_cards} cards, got {len(cards)}",
                expected=self.burn_cards,
            )
        codes = [None if c is None else parse_card(c) for c in cards]
        counts = Counter(c for c in codes if c is not None)
        for code, n in counts.items():
            if n > self.decks:
                raise EngineError(
                    "card_exhausted", f"{code} burned {n} times from a {self.decks}-deck shoe", card=code
                )
        self._out.update(counts)
        self.burned = codes
        return codes

    # -- persistence -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "decks": self.decks,
            "burn_cards": self.burn_cards,
            "stop_card_from_end": self.stop_card_from_end,
            "burned": list(self.burned),
            "drawn": list(self.drawn),
            "voided": list(self.voided),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Shoe:
        """Rebuild from to_dict(); every movement is replayed, so a tampered state is refused."""
        try:
            shoe = cls(
                data["decks"],
                burn_cards=data.get("burn_cards", 0),
                stop_card_from_end=data.get("stop_card_from_end", 7),
            )
            burned, drawn, voided = data.get("burned", []), data.get("drawn", []), data.get("voided", [])
        except (KeyError, TypeError, AttributeError) as exc:
            raise EngineError("bad_shoe", f"not a shoe state: {exc}") from None
        if burned:
            shoe.burn(burned)
        if not shoe._take_all(drawn):
            for card in drawn:
                shoe._take(card)
        for card in voided:
            shoe.void_drawn(card)
        return shoe

    def _take_all(self, drawn: Any) -> bool:
        """from_dict's usual case at C speed: every card a canonical code, none out more times
        than there are decks, no more than the shoe can deal. False (nothing taken) when
        anything is off: the card-by-card replay then refuses it with its own error."""
        if type(drawn) is not list or not all(type(card) is str for card in drawn):
            return False
        if not _CANONICAL.issuperset(drawn) or len(drawn) > self._takeable:
            return False
        if self.burned and len(drawn) >= self.cards_left - len(self.burned) + 1:
            return False  # into the burned cards: the card-by-card replay checks them (_take)
        out = self._out + Counter(drawn)
        if any(n > self.decks for n in out.values()):
            return False
        self._out, self.drawn = out, list(drawn)
        return True

    def _restore(self, data: dict[str, Any]) -> None:
        other = Shoe.from_dict(data)
        self.drawn, self.voided, self.burned, self._out = other.drawn, other.voided, other.burned, other._out

    def __repr__(self) -> str:
        return f"Shoe(decks={self.decks}, cards_left={self.cards_left}, voided={len(self.voided)})"
