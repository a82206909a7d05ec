"""Exact odds of one coup for a profile, the rules in force and a strategy (RULES.md §2, §3).

Pure Python: no Django import (ARCHITECTURE.md). Exact integers and Fractions only.

What is counted
---------------
The convention of the published baccarat combinatorial tables: outcomes are counted as
*ordered 6-card sequences* drawn from a full shoe of ``n = 52 * decks`` cards. A coup that
uses ``k < 6`` cards is weighted by the number of ways to complete it to 6 cards,
``(n-k)(n-k-1)...(n-5)``, so the three counts always add up to
``n(n-1)(n-2)(n-3)(n-4)(n-5)``. For 8-deck Punto Banco this gives the well-known
2,292,252,566,437,888 banker / 2,230,518,282,592,256 player / 475,627,426,473,216 ties
out of 4,998,398,275,503,360.

The play (RULES.md §2): cards 1 and 3 are the punta's, 2 and 4 the banker's; a natural
(8 or 9 with two cards) on either side ends the coup at once (a punta natural compares, a
banker natural beats a non-natural punta); otherwise the punta acts on his two-card total,
then the banker on (his two-card total, the punta's third-card value or STOOD); each side
gets at most one extra card; the total closer to 9 wins, equal totals are a tie.

A strategy gives the decision in the *free* cells of the rules in force: draw, stand, or
draw with an exact probability p/q. Free cells the strategy does not name stand. A mixed
strategy makes the counts Fractions (expected numbers of sequences); a pure one keeps them
ints.

How it is computed
------------------
Only card *values* matter: value 0 has ``16d`` cards, values 1..9 have ``4d`` each. The
number of ordered card sequences with a given value sequence is the product, over values,
of the falling factorial ``c_v (c_v - 1) ...`` of the value's count.

1. Each side's first two cards are grouped as an *unordered pair* of values (55 pairs, a
   pair of two different values standing for its 2 orders), so the deal is 55 * 55 = 3025
   situations instead of 10^4 ordered ones. For each: the remaining counts ``r`` after the
   deal and the deal's weight (orders * falling factorials).
2. Naturals only accumulate the deal's weight per (punta total, banker total); they are
   settled once at the end, * ``(n-4)(n-5)`` completions.
3. Otherwise the punta's branch is followed (stand, and/or draw over his 10 third-card
   values). Where the banker draws, his outcome only depends on how many of the remaining
   cards give him a final total above, equal to or below the punta's: the remaining counts
   are rotated by his two-card total and prefix-summed once per situation, so each
   (situation, punta third card) costs O(1); the punta's third card itself is then taken
   out of the right bucket.
4. Probabilities of mixed cells are scaled to integers (over the lcm of the punta's
   denominators, resp. the banker's), so the inner loops are all small-int arithmetic;
   the scale is divided out once at the end.

Measured (time.perf_counter, CPython 3.11, 2-core dev machine): about 0.008 s for 8-deck
Punto Banco, 0.011 s with a mixed strategy in every cell (target 0.15 s). The work does not
depend on ``d``; only the integers grow.

Banker's edge is per unit of covered bets S: a banker win gains S, a punta win loses S, a
tie is void (0). After the cagnotte a banker win gains ``(1 - rate) * S`` (RULES.md §4; the
rounding of the real levy to 10 cents is a settlement matter, not an odds one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from math import lcm
from typing import Any

from .errors import EngineError
from .profiles import STOOD, BankerTable, Cell, Profile, PuntaTable, UnknownProfile, get_profile

SIDES = ("punta", "banker")
_STOOD_INDEX = 10  # the banker decision tables index the punta's third card 0..9, 10 = he stood
_STOOD_KEYS = ("-", "\u2013", "\u2014")  # "-" is canonical; RULES.md writes an en dash

_PUNTA_KEY = re.compile(r"\s*(\d)\s*")
_BANKER_KEY = re.compile(r"\s*(\d)\s*/\s*(\d|-|\u2013|\u2014)\s*")
_PROBABILITY = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")

Count = int | Fraction


# --------------------------------------------------------------------------- strategy


@dataclass(frozen=True)
class Strategy:
    """Draw probabilities for free cells; a cell not named stands.

    punta: his two-card total 0..7 -> probability of drawing.
    banker: (banker total 0..7, punta third-card value 0..9 or STOOD) -> probability of drawing.
    """

    punta: Mapping[int, Fraction] = field(default_factory=dict)
    banker: Mapping[tuple[int, int | None], Fraction] = field(default_factory=dict)

    @property
    def is_mixed(self) -> bool:
        return any(0 < p < 1 for p in (*self.punta.values(), *self.banker.values()))

    def as_dict(self) -> dict[str, dict[str, str]]:
        """The normalised JSON form: sorted cells, "draw" / "stand" / reduced "p/q"."""
        return {
            "punta": {str(total): _probability_str(p) for total, p in sorted(self.punta.items())},
            "banker": {
                banker_key_str(total, third): _probability_str(p)
                for (total, third), p in sorted(self.banker.items(), key=_banker_sort_key)
            },
        }


def banker_key_str(total: int, third: int | None) -> str:
    return f"{total}/{'-' if third is STOOD else third}"


def _banker_sort_key(item: tuple[tuple[int, int | None], Fraction]) -> tuple[int, int]:
    (total, third), _ = item
    return total, _STOOD_INDEX if third is STOOD else third


def _probability_str(p: Fraction) -> str:
    if p == 1:
        return "draw"
    if p == 0:
        return "stand"
    return f"{p.numerator}/{p.denominator}"


def fraction_str(x: Fraction | int) -> str:
    """Always "p/q" (also "0/1", "3/1"): one shape for every exact ratio in the JSON."""
    x = Fraction(x)
    return f"{x.numerator}/{x.denominator}"


def _bad(message: str, **details: Any) -> EngineError:
    return EngineError("bad_strategy", message, **details)


def _parse_probability(value: Any, where: str) -> Fraction:
    if isinstance(value, Fraction):
        if 0 <= value <= 1:
            return value
        raise _bad(f"{where}: a probability must be between 0 and 1, got {value}.", cell=where)
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "draw":
            return Fraction(1)
        if text == "stand":
            return Fraction(0)
        match = _PROBABILITY.fullmatch(text)
        if match:
            p, q = int(match[1]), int(match[2])
            if q > 0 and p <= q:
                return Fraction(p, q)
    raise _bad(
        f'{where}: the decision must be "draw", "stand" or "p/q" with 0 <= p <= q, q > 0; got {value!r}.',
        cell=where,
    )


def _parse_punta_key(key: Any) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    match = _PUNTA_KEY.fullmatch(key) if isinstance(key, str) else None
    if not match:
        raise _bad(f"punta cell {key!r}: expected the punta's two-card total, 0..7.", cell=str(key))
    total = int(match[1])
    if total > 7:
        raise _bad(f"punta cell {key!r}: 8 and 9 are naturals, never a decision.", cell=str(key))
    return total


def _parse_banker_key(key: Any) -> tuple[int, int | None]:
    match = _BANKER_KEY.fullmatch(key) if isinstance(key, str) else None
    if not match:
        raise _bad(
            f'banker cell {key!r}: expected "<banker total>/<punta third card>", e.g. "3/9" or "6/-".',
            cell=str(key),
        )
    total = int(match[1])
    if total > 7:
        raise _bad(f"banker cell {key!r}: 8 and 9 are naturals, never a decision.", cell=key)
    third = STOOD if match[2] in _STOOD_KEYS else int(match[2])
    return total, third


@dataclass(frozen=True)
class Rules:
    """The drawing rules in force for one coup (RULES.md §3.2), with their names."""

    punta_name: str
    punta: PuntaTable
    banker_name: str
    banker: BankerTable


def rules_in_force(
    profile: Profile, *, regola_punta: bool = False, regola_banker: bool = False, banco_solo: bool = False
) -> Rules:
    for side, declared, table in (
        ("punta", regola_punta, profile.punta_regola),
        ("banker", regola_banker, profile.banker_regola),
    ):
        if declared and table is None:
            raise EngineError(
                "regola_not_allowed",
                f"profile {profile.name!r} does not allow the {side} to declare the Regola.",
                profile=profile.name,
                side=side,
            )
    punta_name, punta = profile.punta_rule(regola=bool(regola_punta), banco_solo=bool(banco_solo))
    banker_name, banker = profile.banker_rule(regola=bool(regola_banker))
    return Rules(punta_name, punta, banker_name, banker)


def recommended_strategy(
    profile: Profile | str,
    *,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
) -> Strategy:
    """The strategy a table is expected to play: every free banker cell as the profile's
    recommended table advises (profiles.py banker_recommended — for an undeclared venezia
    banker, the Regola), free punta cells standing. This is what the end-of-day report
    compares a table's banker win rate against; "free cells stand" would model a banker who
    never draws, which no one plays."""
    profile = resolve_profile(profile)
    rules = rules_in_force(profile, regola_punta=regola_punta, regola_banker=regola_banker, banco_solo=banco_solo)
    banker = {
        key: Fraction(1)
        for key, cell in rules.banker.items()
        if cell is Cell.FREE and profile.banker_recommended[key] is Cell.DRAW
    }
    return Strategy(punta={}, banker=banker)


def parse_strategy(
    obj: Any,
    profile: Profile | str,
    *,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
) -> Strategy:
    """Validate a strategy for the free cells of the rules in force and normalise it.

    ``obj`` is None (every free cell stands), a Strategy (re-checked against these rules),
    a JSON string or a mapping like
    ``{"punta": {"5": "1/2"}, "banker": {"3/9": "draw", "5/4": "stand", "6/-": "859/2288"}}``.
    Errors: ``bad_strategy`` (shape, key or value), ``strategy_cell_not_free`` (the cell is
    not free under the rules in force), ``regola_not_allowed``, ``unknown_profile``.
    """
    profile = resolve_profile(profile)
    rules = rules_in_force(
        profile, regola_punta=regola_punta, regola_banker=regola_banker, banco_solo=banco_solo
    )
    if obj is None:
        return Strategy()
    if isinstance(obj, Strategy):
        punta, banker = _check_strategy_obj(obj)
    else:
        punta, banker = _parse_strategy_obj(obj)
    for total in punta:
        _check_free(rules.punta[total], "punta", str(total), rules.punta_name)
    for total, third in banker:
        _check_free(rules.banker[(total, third)], "banker", banker_key_str(total, third), rules.banker_name)
    return Strategy(punta=punta, banker=banker)


def _parse_strategy_obj(obj: Any) -> tuple[dict[int, Fraction], dict[tuple[int, int | None], Fraction]]:
    if isinstance(obj, str | bytes):
        try:
            obj = json.loads(obj)
        except ValueError as exc:
            raise _bad(f"the strategy is not valid JSON: {exc}.") from None
    if not isinstance(obj, Mapping):
        raise _bad('a strategy is an object {"punta": {...}, "banker": {...}}.')
    unknown = sorted(str(k) for k in obj if k not in SIDES)
    if unknown:
        raise _bad(f"unknown strategy side(s): {', '.join(unknown)}; expected punta, banker.", sides=unknown)
    punta: dict[int, Fraction] = {}
    banker: dict[tuple[int, int | None], Fraction] = {}
    for side, parse_key, out in (("punta", _parse_punta_key, punta), ("banker", _parse_banker_key, banker)):
        cells = obj.get(side) or {}
        if not isinstance(cells, Mapping):
            raise _bad(f"strategy.{side} must be an object of cell: decision.")
        for key, value in cells.items():
            cell = parse_key(key)
            if cell in out:
                raise _bad(f"{side} cell {key!r} is given twice.", cell=str(key))
            out[cell] = _parse_probability(value, f"{side} {key}")
    return punta, banker


def _check_strategy_obj(obj: Strategy) -> tuple[dict[int, Fraction], dict[tuple[int, int | None], Fraction]]:
    """A Strategy built in Python: the same checks as for JSON, on its keys and values."""
    punta: dict[int, Fraction] = {}
    for total, value in obj.punta.items():
        if isinstance(total, bool) or total not in range(8):
            raise _bad(f"punta cell {total!r}: expected the punta's two-card total, 0..7.", cell=repr(total))
        punta[total] = _parse_probability(value, f"punta {total}")
    banker: dict[tuple[int, int | None], Fraction] = {}
    for key, value in obj.banker.items():
        if not (
            isinstance(key, tuple)
            and len(key) == 2
            and not isinstance(key[0], bool)
            and key[0] in range(8)
            and (key[1] is STOOD or (not isinstance(key[1], bool) and key[1] in range(10)))
        ):
            raise _bad(
                f"banker cell {key!r}: expected (banker total 0..7, third card 0..9 or STOOD).",
                cell=repr(key),
            )
        banker[key] = _parse_probability(value, f"banker {banker_key_str(*key)}")
    return punta, banker


def _check_free(cell: Cell, side: str, key: str, rule: str) -> None:
    if cell is not Cell.FREE:
        raise EngineError(
            "strategy_cell_not_free",
            f"{side} cell {key} is not free under {rule} (it says {cell.value}); only free cells take a strategy.",
            side=side,
            cell=key,
            rule=rule,
            required=cell.value,
        )


def resolve_profile(profile: Profile | str | None) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return get_profile(profile)
    except UnknownProfile as exc:
        raise EngineError("unknown_profile", str(exc), profile=profile) from None


def check_decks(decks: Any) -> int:
    if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
        raise EngineError(
            "bad_decks", f"decks must be a whole number >= 1, got {decks!r}.", decks=repr(decks)
        )
    return decks


def sequences_total(decks: int) -> int:
    """n(n-1)(n-2)(n-3)(n-4)(n-5) with n = 52 * decks: the number of ordered 6-card sequences."""
    n = 52 * check_decks(decks)
    return n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class OddsResult:
    profile: str
    decks: int
    punta_rule: str
    banker_rule: str
    strategy: Strategy
    cagnotte_rate: Fraction
    total: int
    banker_wins: Count
    punta_wins: Count
    ties: Count
    probabilities: Mapping[str, Fraction]  # "banker", "punta", "tie"
    banker_edge: Fraction  # banker's expected gain per unit of covered bets, no cagnotte
    banker_edge_after_cagnotte: Fraction  # the same after the cagnotte on his wins

    def as_dict(self) -> dict[str, Any]:
        """JSON shape: ints stay ints, exact ratios and mixed counts are "p/q" strings;
        floats appear only under "approx" (display)."""

        def count(x: Count) -> int | str:
            return fraction_str(x) if isinstance(x, Fraction) else x

        return {
            "profile": self.profile,
            "decks": self.decks,
            "rules": {"punta": self.punta_rule, "banker": self.banker_rule},
            "strategy": self.strategy.as_dict(),
            "total": self.total,
            "banker_wins": count(self.banker_wins),
            "punta_wins": count(self.punta_wins),
            "ties": count(self.ties),
            "probabilities": {side: fraction_str(p) for side, p in self.probabilities.items()},
            "banker_edge": fraction_str(self.banker_edge),
            "banker_edge_after_cagnotte": fraction_str(self.banker_edge_after_cagnotte),
            "cagnotte_rate": fraction_str(self.cagnotte_rate),
            "approx": {
                **{side: float(p) for side, p in self.probabilities.items()},
                "banker_edge": float(self.banker_edge),
                "banker_edge_after_cagnotte": float(self.banker_edge_after_cagnotte),
            },
        }


# --------------------------------------------------------------------------- computation


def exact_odds(
    profile: Profile | str,
    *,
    decks: int,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
    strategy: Strategy | Mapping[str, Any] | str | None = None,
) -> OddsResult:
    """Exact outcome counts (ordered 6-card sequences) and the banker's edge; see the module doc."""
    profile = resolve_profile(profile)
    decks = check_decks(decks)
    flags = {"regola_punta": regola_punta, "regola_banker": regola_banker, "banco_solo": banco_solo}
    rules = rules_in_force(profile, **flags)
    strategy = parse_strategy(strategy, profile, **flags)

    punta_scale = lcm(1, *(p.denominator for p in strategy.punta.values()))
    banker_scale = lcm(1, *(p.denominator for p in strategy.banker.values()))
    punta_draw = [
        _draw_weight(rules.punta[total], strategy.punta.get(total), punta_scale) for total in range(8)
    ]
    banker_draw = [
        [
            _draw_weight(rules.banker[(total, third)], strategy.banker.get((total, third)), banker_scale)
            for third in (*range(10), STOOD)
        ]
        for total in range(8)
    ]
    scaled = _count(decks, punta_draw, punta_scale, banker_draw, banker_scale)
    scale = punta_scale * banker_scale
    if strategy.is_mixed:
        banker_wins, punta_wins, ties = (Fraction(x, scale) for x in scaled)
    else:  # every draw weight is 0 or 1: the scale is 1
        banker_wins, punta_wins, ties = scaled

    total = sequences_total(decks)
    if banker_wins + punta_wins + ties != total:  # an invariant of the counting, never the input
        raise AssertionError("odds enumeration does not add up to n(n-1)...(n-5)")
    rate = Fraction(profile.cagnotte_rate)
    return OddsResult(
        profile=profile.name,
        decks=decks,
        punta_rule=rules.punta_name,
        banker_rule=rules.banker_name,
        strategy=strategy,
        cagnotte_rate=rate,
        total=total,
        banker_wins=banker_wins,
        punta_wins=punta_wins,
        ties=ties,
        probabilities={
            "banker": Fraction(banker_wins) / total,
            "punta": Fraction(punta_wins) / total,
            "tie": Fraction(ties) / total,
        },
        banker_edge=Fraction(banker_wins - punta_wins) / total,
        banker_edge_after_cagnotte=(banker_wins * (1 - rate) - punta_wins) / total,
    )


def _draw_weight(cell: Cell, chosen: Fraction | None, scale: int) -> int:
    """The probability of drawing in one cell, as an integer over `scale`."""
    if cell is Cell.DRAW:
        return scale
    if cell is Cell.STAND:
        return 0
    p = chosen or Fraction(0)  # a free cell the strategy does not name stands
    return p.numerator * (scale // p.denominator)


def _count(
    decks: int, punta_draw: list[int], lp: int, banker_draw: list[list[int]], lb: int
) -> tuple[int, int, int]:
    """(banker wins, punta wins, ties) over ordered 6-card sequences, each * lp * lb.

    punta_draw[P]: his draw weight (over lp) on two-card total P in 0..7.
    banker_draw[B][k]: the banker's draw weight (over lb) on total B in 0..7 when the punta's
    third card is k in 0..9, k = 10 when he stood.
    """
    counts = [16 * decks] + [4 * decks] * 9
    left = 52 * decks - 4  # cards left after the deal
    # Weights of the situations where the coup ends after the deal (naturals), by (P, B).
    dealt = [[0] * 10 for _ in range(10)]
    pairs = [(a, b, 1 if a == b else 2) for a in range(10) for b in range(a, 10)]
    bank = punt = tie = 0
    for a, b, orders_p in pairs:
        punta_total = (a + b) % 10
        pd = punta_draw[punta_total] if punta_total < 8 else 0
        ps = lp - pd
        for x, y, orders_b in pairs:
            banker_total = (x + y) % 10
            r = counts.copy()
            w = r[a]
            r[a] -= 1
            w *= r[b]
            r[b] -= 1
            w *= r[x]
            r[x] -= 1
            w *= r[y]
            r[y] -= 1
            if not w:
                continue
            w *= orders_p * orders_b
            if punta_total >= 8 or banker_total >= 8:
                dealt[punta_total][banker_total] += w
                continue
            # rot[t]: remaining cards that make the banker's final total t; below[t]: those under t.
            rot = r[-banker_total:] + r[:-banker_total] if banker_total else r
            below = [0] * 11
            acc = 0
            for t in range(10):
                acc += rot[t]
                below[t + 1] = acc
            draws = banker_draw[banker_total]
            sb = sp = st = 0  # this situation's counts, over sequences of cards 5 and 6
            if ps:
                bd = draws[_STOOD_INDEX]
                bs = lb - bd
                if bs:  # nobody draws: 2 * the completion (left)(left - 1)
                    k = ps * bs * left * (left - 1)
                    if banker_total > punta_total:
                        sb += k
                    elif banker_total < punta_total:
                        sp += k
                    else:
                        st += k
                if bd:  # the banker draws card 5; card 6 completes
                    k = ps * bd * (left - 1)
                    sp += k * below[punta_total]
                    st += k * rot[punta_total]
                    sb += k * (left - below[punta_total + 1])
            if pd:
                for p3 in range(10):
                    c3 = r[p3]
                    if not c3:
                        continue
                    final = punta_total + p3
                    if final >= 10:
                        final -= 10
                    bd = draws[p3]
                    bs = lb - bd
                    if bs:  # the punta draws card 5, the banker stands; card 6 completes
                        k = pd * bs * c3 * (left - 1)
                        if banker_total > final:
                            sb += k
                        elif banker_total < final:
                            sp += k
                        else:
                            st += k
                    if bd:  # card 6 is the banker's, out of the remaining less the punta's card
                        k = pd * bd * c3
                        lo, eq, hi = below[final], rot[final], left - below[final + 1]
                        own = banker_total + p3  # the punta's card is no longer in the shoe
                        if own >= 10:
                            own -= 10
                        if own < final:
                            lo -= 1
                        elif own > final:
                            hi -= 1
                        else:
                            eq -= 1
                        sp += k * lo
                        st += k * eq
                        sb += k * hi
            bank += w * sb
            punt += w * sp
            tie += w * st
    completions = left * (left - 1) * lp * lb
    for punta_total in range(10):
        for banker_total in range(10):
            w = dealt[punta_total][banker_total]
            if not w:
                continue
            # A banker natural wins against a non-natural punta; naturals compare (RULES.md §2.4-6).
            if banker_total > punta_total:
                bank += w * completions
            elif banker_total < punta_total:
                punt += w * completions
            else:
                tie += w * completions
    return bank, punt, tie
