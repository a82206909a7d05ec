"""Cards and totals (RULES.md §1)."""

from __future__ import annotations

import pytest

from tables.engine import (
    ALL_CARDS,
    VALUES,
    EngineError,
    card_value,
    hand_total,
    is_natural,
    parse_card,
    parse_cards,
)


@pytest.mark.parametrize(
    ("code", "canonical"),
    [
        ("AS", "AS"),
        ("as", "AS"),
        ("aS", "AS"),
        ("10h", "10H"),
        ("10H", "10H"),
        ("TD", "10D"),
        ("td", "10D"),
        ("9♥", "9H"),
        ("k♠", "KS"),
        ("Q♦", "QD"),
        ("J♣", "JC"),
        ("t♣", "10C"),
        ("2c", "2C"),
    ],
)
def test_parse_normalises_every_spelling(code, canonical):
    assert parse_card(code) == canonical


@pytest.mark.parametrize(
    "code",
    [
        "",
        "A",
        "S",
        "1S",
        "11H",
        "0H",
        "AX",
        "A S",
        " AS",
        "AS ",
        "ZZ",
        "10",
        "♥9",
        "AS♠",
        "TT",
        "2\u017f",  # long s: str.upper() makes it "S"
        "\u0131S",  # dotless i
        "\uff21S",  # fullwidth A
        "A\uff33",  # fullwidth S
        5,
        None,
        ["AS"],
    ],
)
def test_anything_else_is_bad_card(code):
    with pytest.raises(EngineError) as err:
        parse_card(code)
    assert err.value.code == "bad_card"


def test_there_are_52_canonical_cards_each_parsing_to_itself():
    assert len(ALL_CARDS) == 52 == len(set(ALL_CARDS))
    assert all(parse_card(c) == c for c in ALL_CARDS)


@pytest.mark.parametrize(
    ("rank", "value"),
    [("A", 1), *((str(n), n) for n in range(2, 10)), ("10", 0), ("J", 0), ("Q", 0), ("K", 0)],
)
def test_values(rank, value):
    for suit in "SHDC":
        assert VALUES[rank + suit] == value
        assert card_value(rank.lower() + suit) == value


def test_totals_are_modulo_ten():
    assert hand_total(["7S", "8H"]) == 5  # the RULES.md §1 example
    assert hand_total(["KS", "QH"]) == 0
    assert hand_total(["9S", "9H", "9D"]) == 7
    assert hand_total(["AS", "TD"]) == 1


def test_naturals_are_eight_and_nine():
    assert [t for t in range(10) if is_natural(t)] == [8, 9]


def test_parse_cards_keeps_order():
    assert parse_cards(["as", "10♥", "TD"]) == ("AS", "10H", "10D")
