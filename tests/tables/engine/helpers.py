"""Shared helpers for the engine tests. No database anywhere in tests/tables/engine."""

from __future__ import annotations

from typing import Any

# One card per value, for building coups that reach a given cell (0 is a ten).
VALUE_CARD = {0: "KS", 1: "AS", 2: "2S", 3: "3S", 4: "4S", 5: "5S", 6: "6S", 7: "7S", 8: "8S", 9: "9S"}


def two_cards(total: int, suit: str = "H") -> tuple[str, str]:
    """Two cards whose total is `total` (the second is a ten), in the given suit."""
    first = VALUE_CARD[total][:-1] + suit
    return first, "Q" + suit


def deal(punta_total: int, banker_total: int) -> list[str]:
    """The four dealt cards in shoe order: punta, banker, punta, banker (RULES.md §2.3)."""
    p1, p2 = two_cards(punta_total, "H")
    b1, b2 = two_cards(banker_total, "D")
    return [p1, b1, p2, b2]


def is_subset(expected: Any, actual: Any) -> bool:
    """Recursive subset: dict keys of `expected` present with subset values; lists equal
    in length with element-wise subset; anything else equal (bool is not int here)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return type(expected) is type(actual) and expected == actual
