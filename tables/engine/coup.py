"""One coup: play it from the cards in shoe order, check it against the rule in force, and
reconstruct it when it does not conform (RULES.md §2 and §3.3).

The profile tables are compiled once per (profile, Regola declarations, banco solo) into
flat tuples of small ints, so the hot path is integer arithmetic and tuple indexing; the
engine still has no per-profile branch (every decision comes from the profile's data).

Public API (re-exported by tables.engine):
    play(cards, *, punta_draws, banker_draws=None) -> Coup
    check(coup, profile, *, regola_punta=False, regola_banker=False, banco_solo=False) -> tuple[Violation, ...]
    reconstruct(coup, profile, *, ..., next_cards=(), punta_draws=None, banker_draws=None) -> Settled
    resolve(cards, profile, *, ...) -> Resolution      (all three, as resolve_coups does)
    rules_in_force(profile, *, regola_punta, regola_banker, banco_solo) -> Rules
    rule_in_force(profile, side, *, ...) -> RuleHint   (the tablet's hint, §3.2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from .cards import _CANON, VALUES, Card, card_value, parse_cards
from .errors import EngineError
from .profiles import STOOD, Cell, Profile, Side

PUNTA = "punta"
BANKER = "banker"
TIE = "tie"

FINAL = "final"
PENDING = "pending"

# Compiled cells: small ints compare faster than enum members, and `drew != cell` checks a
# binding cell directly (True == 1, False == 0).
_STAND, _DRAW, _FREE = 0, 1, 2
_CELL_CODE = {Cell.STAND: _STAND, Cell.DRAW: _DRAW, Cell.FREE: _FREE}
_CODE_CELL = (Cell.STAND, Cell.DRAW, Cell.FREE)
_DONE = ("stand", "draw")
_tnew = tuple.__new__  # builds a NamedTuple without its keyword-parsing __new__ (hot path)
_STOOD_INDEX = 10  # banker tables are indexed total * 11 + (third-card value, or 10 when the punta stood)


# -- results ---------------------------------------------------------------------------------
class Hand(NamedTuple):
    cards: tuple[Card, ...]
    total: int

    def as_dict(self) -> dict[str, Any]:
        return {"cards": list(self.cards), "total": self.total}


class Coup(NamedTuple):
    """A coup as played (or as reconstructed). `cards` is every card of the coup in shoe order."""

    cards: tuple[Card, ...]
    punta: Hand
    banker: Hand
    winner: str  # "punta" | "banker" | "tie"
    natural: bool
    punta_draws: bool | None  # the punta's declaration; None when he showed a natural (§2.4)

    @property
    def punta_two_card_total(self) -> int:
        return (VALUES[self.cards[0]] + VALUES[self.cards[2]]) % 10

    @property
    def banker_two_card_total(self) -> int:
        return (VALUES[self.cards[1]] + VALUES[self.cards[3]]) % 10

    @property
    def punta_third(self) -> Card | None:
        return self.punta.cards[2] if len(self.punta.cards) == 3 else None

    @property
    def banker_drew(self) -> bool:
        return len(self.banker.cards) == 3

    def as_dict(self) -> dict[str, Any]:
        return {
            "punta": self.punta.as_dict(),
            "banker": self.banker.as_dict(),
            "winner": self.winner,
            "natural": self.natural,
        }


class Violation(NamedTuple):
    side: str
    rule: str  # the table's name, from Profile.punta_rule / banker_rule
    punta_total: int  # two-card totals
    banker_total: int
    punta_third_card: Card | None
    punta_third_value: int | None
    required: str  # "draw" | "stand"
    done: str

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


class Settled(NamedTuple):
    """The coup to settle on: final (with the void cards) or pending (with what it needs)."""

    status: str  # "final" | "pending"
    coup: Coup | None
    needs: dict[str, Any] | None  # {"cards": 1} | {"decision": "banker"|"punta"}
    void_cards: tuple[Card, ...]

    def as_dict(self) -> dict[str, Any]:
        if self.status == PENDING:
            return {"status": PENDING, "needs": dict(self.needs or {})}
        return {**self.coup.as_dict(), "status": FINAL, "needs": None, "void_cards": list(self.void_cards)}


class Resolution(NamedTuple):
    """One coup resolved: as played, its violations, and the version to settle on.

    resolve() is the floor's hot path, so it records the coup once, compactly, and the
    Coup / Hand views are built when read (`as_played`, `settled`): most callers need
    only `conforming`, and nothing here is mutable, so a view is always the same value."""

    cards: tuple[Card, ...]  # the coup's cards as played, canonical, in shoe order
    punta_draws: bool | None  # the punta's declaration; None when he showed a natural
    natural: bool
    punta_drew: bool
    banker_drew: bool
    punta_total: int  # final totals and winner of the coup as played
    banker_total: int
    winner: str
    violations: tuple[Violation, ...]
    reconstructed: Settled | None  # the replay; None when the coup conforms (settles as played)

    @property
    def conforming(self) -> bool:
        return not self.violations

    @property
    def settled_winner(self) -> str | None:
        """The winner to settle on (RULES.md §3.3); None while the reconstruction is pending."""
        r = self.reconstructed
        if r is None:
            return self.winner
        return r.coup.winner if r.coup is not None else None

    @property
    def as_played(self) -> Coup:
        c, v = self.cards, VALUES
        pt = (v[c[0]] + v[c[2]]) % 10
        bt = (v[c[1]] + v[c[3]]) % 10
        return _as_played(c, pt, bt, self.natural, self.punta_drew, self.banker_drew, self.punta_draws)

    @property
    def settled(self) -> Settled:
        if self.reconstructed is not None:
            return self.reconstructed
        return _tnew(Settled, (FINAL, self.as_played, None, ()))

    def as_dict(self) -> dict[str, Any]:
        played = self.as_played
        settled = self.reconstructed or Settled(FINAL, played, None, ())
        return {
            "as_played": played.as_dict(),
            "conforming": not self.violations,
            "violations": [v._asdict() for v in self.violations],
            "settled": settled.as_dict(),
        }


class Rules(NamedTuple):
    """The rule in force for both sides of one coup, compiled (RULES.md §3.2)."""

    punta_name: str
    punta: tuple[int, ...]  # index: punta two-card total 0..7
    banker_name: str
    banker: tuple[int, ...]  # index: banker total * 11 + third-card value (10 = the punta stood)

    def punta_cell(self, total: int) -> Cell:
        return _CODE_CELL[self.punta[total]]

    def banker_cell(self, total: int, third: int | None) -> Cell:
        return _CODE_CELL[self.banker[total * 11 + (_STOOD_INDEX if third is None else third)]]


class RuleHint(NamedTuple):
    side: str
    rule: str
    cell: Cell
    advice: Cell | None  # for a free banker cell: what profile.banker_recommended advises


# -- rules in force --------------------------------------------------------------------------
# id(profile) -> (profile, the 8 compiled Rules indexed by _variant()). The profile is kept
# in the entry so that its id cannot be reused by another object while cached.
_rules_cache: dict[int, tuple[Profile, tuple[Rules, ...]]] = {}


def _compile(profile: Profile, regola_punta: bool, regola_banker: bool, banco_solo: bool) -> Rules:
    punta_name, punta_table = profile.punta_rule(regola=regola_punta, banco_solo=banco_solo)
    banker_name, banker_table = profile.banker_rule(regola=regola_banker)
    banker: list[int] = []
    for total in range(8):
        banker.extend(_CELL_CODE[banker_table[(total, third)]] for third in range(10))
        banker.append(_CELL_CODE[banker_table[(total, STOOD)]])
    return Rules(punta_name, tuple(_CELL_CODE[c] for c in punta_table), banker_name, tuple(banker))


def _variants(profile: Profile) -> tuple[Rules, ...]:
    hit = _rules_cache.get(id(profile))
    if hit is not None and hit[0] is profile:
        return hit[1]
    variants = tuple(_compile(profile, bool(i & 4), bool(i & 2), bool(i & 1)) for i in range(8))
    _rules_cache[id(profile)] = (profile, variants)
    return variants


def rules_in_force(
    profile: Profile, *, regola_punta: bool = False, regola_banker: bool = False, banco_solo: bool = False
) -> Rules:
    """The rule in force per side, compiled: profile + Regola (only where the profile has
    one) + banco solo (RULES.md §3.2)."""
    return _variants(profile)[
        (4 if regola_punta else 0) | (2 if regola_banker else 0) | (1 if banco_solo else 0)
    ]


def rule_in_force(
    profile: Profile,
    side: str,
    *,
    regola: bool = False,
    banco_solo: bool = False,
    punta_total: int | None = None,
    banker_total: int | None = None,
    punta_third: int | str | None = STOOD,
) -> RuleHint:
    """The cell that governs a decision, and the advice for a free banker cell (tablet hint, §3.2).

    Punta: needs punta_total. Banker: needs banker_total and punta_third (value 0..9, a card
    code, or STOOD/None when the punta stood). Totals are two-card totals 0..7; 8 and 9 are
    naturals and have no decision."""
    if side == Side.PUNTA:
        _check_total(punta_total, "punta_total")
        name, table = profile.punta_rule(regola=regola, banco_solo=banco_solo)
        return RuleHint(Side.PUNTA.value, name, table[punta_total], None)
    if side == Side.BANKER:
        _check_total(banker_total, "banker_total")
        third = _third_value(punta_third)
        name, table = profile.banker_rule(regola=regola)
        cell = table[(banker_total, third)]
        advice = profile.banker_recommended[(banker_total, third)] if cell is Cell.FREE else None
        return RuleHint(Side.BANKER.value, name, cell, advice)
    raise EngineError("bad_side", f"side must be 'punta' or 'banker', not {side!r}", side=str(side))


def _check_total(total: object, name: str) -> None:
    if type(total) is not int or not 0 <= total <= 7:
        raise EngineError(
            "bad_total", f"{name} must be a two-card total 0..7 (8 and 9 are naturals)", **{name: total}
        )


def _third_value(third: object) -> int | None:
    if third is None:
        return None
    if type(third) is int:
        if 0 <= third <= 9:
            return third
        raise EngineError("bad_total", f"a third card's value is 0..9, not {third}", punta_third=third)
    return card_value(third)  # a card code; bad_card otherwise


# -- play (RULES.md §2) ------------------------------------------------------------------------
def _canonical(cards: Sequence[object]) -> tuple[Card, ...]:
    try:
        return tuple([_CANON[c] for c in cards])  # the common case: upper-case codes
    except (KeyError, TypeError):
        return parse_cards(cards)


def _deal(
    cards: tuple[Card, ...], punta_draws: bool | None, banker_draws: bool | None
) -> tuple[int, int, bool, bool, bool]:
    """Validate the cards against the declarations. Returns (punta two-card total, banker
    two-card total, natural, punta drew, banker drew); raises EngineError on any mismatch."""
    n = len(cards)
    if n < 4:
        raise EngineError("too_few_cards", f"a coup needs the 4 dealt cards, got {n}", count=n)
    v = VALUES
    pt = (v[cards[0]] + v[cards[2]]) % 10
    bt = (v[cards[1]] + v[cards[3]]) % 10
    if pt >= 8:
        # §2.4: the punta shows at once, no third card for anyone; no declaration is made.
        if n > 4:
            raise EngineError("card_after_natural", "the punta showed a natural: no third card", count=n)
        if punta_draws:
            raise EngineError("decision_contradicts_cards", "the punta cannot ask for a card with a natural")
        if banker_draws:
            raise EngineError("decision_contradicts_cards", "the banker cannot draw after a natural")
        return pt, bt, True, False, False
    if bt >= 8:
        # §2.5-2.6: the punta declares before the banker looks; then the banker shows and
        # wins at once, and the card the punta asked for is not given.
        if n > 4:
            raise EngineError("card_after_natural", "the banker showed a natural: no third card", count=n)
        if punta_draws is None:
            raise EngineError("decision_missing", "the punta's declaration (carte / non) is missing")
        if banker_draws:
            raise EngineError("decision_contradicts_cards", "the banker cannot draw after a natural")
        return pt, bt, True, False, False
    if punta_draws is None:
        raise EngineError("decision_missing", "the punta's declaration (carte / non) is missing")
    used = 5 if punta_draws else 4
    if n < used:
        raise EngineError("too_few_cards", "the punta said carte but his third card is missing", count=n)
    if n > used + 1:
        raise EngineError(
            "too_many_cards",
            f"at most {used + 1} cards with these declarations, got {n}",
            count=n,
            allowed=used + 1,
        )
    drew = n == used + 1
    if banker_draws is not None and banker_draws != drew:
        raise EngineError(
            "decision_contradicts_cards",
            "the banker's declaration does not match the cards: "
            + (
                "he drew but no third card is recorded"
                if banker_draws
                else "he stood but a third card is recorded"
            ),
            banker_draws=banker_draws,
            count=n,
        )
    return pt, bt, False, bool(punta_draws), drew


def _winner(pt: int, bt: int) -> str:
    return PUNTA if pt > bt else BANKER if bt > pt else TIE


def _build(
    cards: tuple[Card, ...],
    pt: int,
    bt: int,
    natural: bool,
    p3: Card | None,
    b3: Card | None,
    decl: bool | None,
) -> Coup:
    v = VALUES
    if p3 is None:
        punta = _tnew(Hand, ((cards[0], cards[2]), pt))
    else:
        pt = (pt + v[p3]) % 10
        punta = _tnew(Hand, ((cards[0], cards[2], p3), pt))
    if b3 is None:
        banker = _tnew(Hand, ((cards[1], cards[3]), bt))
    else:
        bt = (bt + v[b3]) % 10
        banker = _tnew(Hand, ((cards[1], cards[3], b3), bt))
    winner = PUNTA if pt > bt else BANKER if bt > pt else TIE
    return _tnew(Coup, (cards, punta, banker, winner, natural, decl))


def _as_played(
    cards: tuple[Card, ...], pt: int, bt: int, natural: bool, pdrew: bool, bdrew: bool, decl: bool | None
) -> Coup:
    p3 = cards[4] if pdrew else None
    b3 = cards[-1] if bdrew else None
    return _build(cards, pt, bt, natural, p3, b3, decl)


def play(
    cards: Sequence[object], *, punta_draws: bool | None = None, banker_draws: bool | None = None
) -> Coup:
    """Play a coup from its cards in shoe order and the declarations (RULES.md §2)."""
    canon = _canonical(cards)
    pt, bt, natural, pdrew, bdrew = _deal(canon, punta_draws, banker_draws)
    return _as_played(canon, pt, bt, natural, pdrew, bdrew, None if pt >= 8 else bool(punta_draws))


# -- conformance (RULES.md §3.2-3.3) -----------------------------------------------------------
def _violations(rules: Rules, cards: tuple[Card, ...], pt: int, bt: int, pdrew: bool, bdrew: bool) -> tuple:
    pcell = rules.punta[pt]
    p3 = cards[4] if pdrew else None
    p3v = VALUES[p3] if pdrew else None
    bcell = rules.banker[bt * 11 + (_STOOD_INDEX if p3v is None else p3v)]
    punta_bad = pcell != _FREE and pcell != pdrew
    banker_bad = bcell != _FREE and bcell != bdrew
    if not (punta_bad or banker_bad):
        return ()
    out = []
    if punta_bad:
        out.append(Violation(PUNTA, rules.punta_name, pt, bt, p3, p3v, _DONE[pcell], _DONE[pdrew]))
    if banker_bad:
        out.append(Violation(BANKER, rules.banker_name, pt, bt, p3, p3v, _DONE[bcell], _DONE[bdrew]))
    return tuple(out)


def _declaration_violation(rules: Rules, pt: int, bt: int, declared: bool) -> tuple:
    """The punta's declaration before a banker's natural (§2.6): no card was given, so the
    violation names none."""
    pcell = rules.punta[pt]
    if pcell in (_FREE, declared):
        return ()
    return (Violation(PUNTA, rules.punta_name, pt, bt, None, None, _DONE[pcell], _DONE[declared]),)


def check(
    coup: Coup,
    profile: Profile,
    *,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
) -> tuple[Violation, ...]:
    """Every broken binding cell of the coup as played; () when it conforms. After a punta's
    natural no one decided anything (§2.4). After a banker's natural only the punta did: he
    declared before the banker looked at his cards (§2.5, §2.6), and that declaration is
    checked though the card he asked for is not given."""
    if coup.natural:
        if coup.punta_draws is None:
            return ()
        rules = rules_in_force(
            profile, regola_punta=regola_punta, regola_banker=regola_banker, banco_solo=banco_solo
        )
        return _declaration_violation(rules, coup.punta_two_card_total, coup.banker_two_card_total,
                                      coup.punta_draws)  # fmt: skip
    rules = rules_in_force(
        profile, regola_punta=regola_punta, regola_banker=regola_banker, banco_solo=banco_solo
    )
    return _violations(
        rules,
        coup.cards,
        coup.punta_two_card_total,
        coup.banker_two_card_total,
        coup.punta_draws,
        coup.banker_drew,
    )


# -- reconstruction (RULES.md §3.3) ------------------------------------------------------------
def _replay(
    rules: Rules,
    cards: tuple[Card, ...],
    pt: int,
    bt: int,
    real_pdrew: bool | None,
    real_bdrew: bool,
    next_cards: tuple[Card, ...],
    rec_punta: bool | None,
    rec_banker: bool | None,
) -> Settled:
    """Replay a coup without naturals under `rules`, with the cards in shoe order: the real
    draws first (cards[4:]), then next_cards."""
    pool = cards[4:] + next_cards if next_cards else cards[4:]
    size = len(pool)
    pos = 0
    v = VALUES

    # Punta. A free cell is decided as in the real coup: his situation (two-card total) is
    # the same in both versions; real_pdrew is None only if the real coup never asked him.
    cell = rules.punta[pt]
    if cell == _FREE:
        pdrew = real_pdrew if real_pdrew is not None else rec_punta
        if pdrew is None:
            return Settled(PENDING, None, {"decision": PUNTA}, ())
    else:
        pdrew = cell == _DRAW
    p3 = None
    if pdrew:
        if size == 0:
            return Settled(PENDING, None, {"cards": 1}, ())
        p3 = pool[0]
        pos = 1

    # Banker. A free cell reuses his real decision only if the real coup reached the same
    # cell (same punta third-card value, or the punta stood in both); else it must be entered.
    index = _STOOD_INDEX if p3 is None else v[p3]
    cell = rules.banker[bt * 11 + index]
    if cell == _FREE:
        real_index = _STOOD_INDEX if not real_pdrew else v[cards[4]]
        if real_index == index:
            bdrew = real_bdrew
        elif rec_banker is not None:
            bdrew = rec_banker
        else:
            return Settled(PENDING, None, {"decision": BANKER}, ())
    else:
        bdrew = cell == _DRAW
    b3 = None
    if bdrew:
        if pos >= size:
            return Settled(PENDING, None, {"cards": 1}, ())
        b3 = pool[pos]
        pos += 1

    real_extra = len(cards) - 4
    if pos < real_extra:
        void = cards[4 + pos :]  # drawn in the real coup, unused by the replay: to the sibilla
        if next_cards:
            _unused(next_cards, 0)
    else:
        void = ()
        if len(next_cards) > pos - real_extra:
            _unused(next_cards, pos - real_extra)
    # The settled coup's own cards, in the order the replay dealt them.
    used = cards[:4] if p3 is None else (*cards[:4], p3)
    if b3 is not None:
        used = (*used, b3)
    return Settled(FINAL, _build(used, pt, bt, False, p3, b3, pdrew), None, void)


def _unused(next_cards: tuple[Card, ...], used: int) -> None:
    raise EngineError(
        "unused_next_cards",
        f"{len(next_cards) - used} of the next shoe cards supplied are not needed by the coup",
        unused=list(next_cards[used:]),
    )


def reconstruct(
    coup: Coup,
    profile: Profile,
    *,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
    next_cards: Sequence[object] = (),
    punta_draws: bool | None = None,
    banker_draws: bool | None = None,
) -> Settled:
    """Replay the coup under the rule in force (§3.3). A conforming coup replays to itself.

    next_cards: the shoe's next cards, for draws the real coup did not make; punta_draws /
    banker_draws: decisions entered for free cells the real coup never reached."""
    nxt = _canonical(next_cards) if next_cards else ()
    if coup.natural:
        if nxt:
            _unused(nxt, 0)
        if coup.punta_draws is not None:
            rules = rules_in_force(
                profile, regola_punta=regola_punta, regola_banker=regola_banker, banco_solo=banco_solo
            )
            if _declaration_violation(rules, coup.punta_two_card_total, coup.banker_two_card_total,
                                      coup.punta_draws):  # fmt: skip
                # Replayed, the punta declares as his rule binds him; the banker's natural
                # still wins before any third card (§2.6).
                return Settled(FINAL, coup._replace(punta_draws=not coup.punta_draws), None, ())
        return Settled(FINAL, coup, None, ())
    rules = rules_in_force(
        profile, regola_punta=regola_punta, regola_banker=regola_banker, banco_solo=banco_solo
    )
    return _replay(
        rules,
        coup.cards,
        coup.punta_two_card_total,
        coup.banker_two_card_total,
        coup.punta_draws,
        coup.banker_drew,
        nxt,
        punta_draws,
        banker_draws,
    )


def _check_shoe(cards: tuple[Card, ...], decks: int) -> None:
    """No rank+suit may come out of one shoe more times than there are decks (§1)."""
    if len(cards) <= decks or len(set(cards)) == len(cards):
        return  # cannot exceed: too few cards, or none repeated
    for card, times in Counter(cards).items():
        if times > decks:
            raise EngineError(
                "card_exhausted",
                f"{card} appears {times} times in one coup from a {decks}-deck shoe",
                card=card,
            )


_CANONICAL = frozenset(VALUES)
_last_profile: list = [None, ()]  # (profile, compiled variants): one table is usually in play


def resolve(
    cards: Sequence[object],
    profile: Profile,
    *,
    punta_draws: bool | None = None,
    banker_draws: bool | None = None,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
    next_cards: Sequence[object] = (),
    reconstruction_punta_draws: bool | None = None,
    reconstruction_banker_draws: bool | None = None,
) -> Resolution:
    """Play, check and reconstruct one coup: what resolve_coups prints for one line.

    Reconstruction runs whenever the coup is non-conforming, Regola or not (§3.3). A
    conforming coup settles as played; next cards supplied to it are an error.

    This is the floor's hot path: the same steps as play(), check() and reconstruct(),
    through the same helpers, with the common case inlined (measured by bench/engine.py)."""
    try:
        # The common case, checked in C: every code already canonical.
        canonical = _CANONICAL.issuperset(cards)
    except TypeError:  # an unhashable entry: parse_cards reports it
        canonical = False
    if not canonical:
        canon = parse_cards(cards)
    elif type(cards) is tuple:
        canon = cards
    else:
        canon = tuple(cards)
    n = len(canon)
    if next_cards:
        nxt = _canonical(next_cards)
        _check_shoe(canon + nxt, profile.decks)
    else:
        nxt = ()
        if n > profile.decks:
            _check_shoe(canon, profile.decks)
    v = VALUES
    if n >= 4 and banker_draws is None and punta_draws is not None:
        # Fast path of _deal for the usual entry (the punta declared, the banker's draw
        # read from the card count); naturals and any mismatch go through _deal.
        pt = (v[canon[0]] + v[canon[2]]) % 10
        bt = (v[canon[1]] + v[canon[3]]) % 10
        pdrew = bool(punta_draws)
        if pt >= 8 or bt >= 8 or n > 5 + pdrew or (pdrew and n == 4):
            pt, bt, natural, pdrew, bdrew = _deal(canon, punta_draws, banker_draws)
        else:
            natural = False
            bdrew = n == 5 + pdrew
    else:
        pt, bt, natural, pdrew, bdrew = _deal(canon, punta_draws, banker_draws)
    decl = None if pt >= 8 else bool(punta_draws)

    if _last_profile[0] is profile:
        variants = _last_profile[1]
    else:
        variants = _variants(profile)
        _last_profile[:] = (profile, variants)
    rules = variants[(4 if regola_punta else 0) | (2 if regola_banker else 0) | (1 if banco_solo else 0)]

    if natural:
        if nxt:
            _unused(nxt, 0)
        winner = PUNTA if pt > bt else BANKER if bt > pt else TIE
        # A banker's natural: the punta had declared (§2.5-2.6). A declaration against the
        # rule in force is a violation; the replay has him declare as the rule binds him and
        # the banker's natural still wins before any third card: it settles the same, on
        # the reconstruction.
        violations = () if decl is None else _declaration_violation(rules, pt, bt, decl)
        if not violations:
            return _tnew(Resolution, (canon, decl, True, False, False, pt, bt, winner, (), None))
        replayed = Settled(FINAL, _as_played(canon, pt, bt, True, False, False, not decl), None, ())
        return _tnew(Resolution, (canon, decl, True, False, False, pt, bt, winner, violations, replayed))
    p3v = v[canon[4]] if pdrew else None
    pf = (pt + p3v) % 10 if pdrew else pt
    bf = (bt + v[canon[-1]]) % 10 if bdrew else bt
    winner = PUNTA if pf > bf else BANKER if bf > pf else TIE

    # Conformance: both cells, as in _violations, which builds the details when one is broken.
    pcell = rules.punta[pt]
    bcell = rules.banker[bt * 11 + (_STOOD_INDEX if p3v is None else p3v)]
    if pcell in (_FREE, pdrew) and bcell in (_FREE, bdrew):
        if nxt:
            _unused(nxt, 0)
        return _tnew(Resolution, (canon, decl, False, pdrew, bdrew, pf, bf, winner, (), None))
    violations = _violations(rules, canon, pt, bt, pdrew, bdrew)
    settled = _replay(
        rules, canon, pt, bt, pdrew, bdrew, nxt, reconstruction_punta_draws, reconstruction_banker_draws
    )
    return _tnew(Resolution, (canon, decl, False, pdrew, bdrew, pf, bf, winner, violations, settled))
