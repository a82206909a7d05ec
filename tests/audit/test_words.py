"""The control register's total in words (RULES.md §8, art. 72), Italian and English."""

from __future__ import annotations

import pytest

from audit.reports.words import euros_en, euros_it, number_en, number_it

IT_NUMBERS = {
    0: "zero", 1: "uno", 3: "tre", 10: "dieci", 11: "undici", 16: "sedici", 17: "diciassette",
    18: "diciotto", 19: "diciannove", 20: "venti", 21: "ventuno", 23: "ventitré", 28: "ventotto",
    31: "trentuno", 33: "trentatré", 38: "trentotto", 40: "quaranta", 41: "quarantuno",
    48: "quarantotto", 58: "cinquantotto", 61: "sessantuno", 77: "settantasette", 81: "ottantuno",
    88: "ottantotto", 91: "novantuno", 98: "novantotto", 99: "novantanove", 100: "cento",
    101: "centouno", 103: "centotré", 108: "centotto", 111: "centoundici", 118: "centodiciotto",
    180: "centottanta", 181: "centottantuno", 188: "centottantotto", 200: "duecento",
    280: "duecentottanta", 308: "trecentotto", 333: "trecentotrentatré", 999: "novecentonovantanove",
    1000: "mille", 1001: "milleuno", 1003: "milletré", 1008: "milleotto", 1100: "millecento",
    1180: "millecentottanta", 1234: "milleduecentotrentaquattro", 2000: "duemila",
    2001: "duemilauno", 3333: "tremilatrecentotrentatré", 8000: "ottomila", 10_000: "diecimila",
    21_000: "ventunomila", 23_000: "ventitremila", 28_000: "ventottomila", 100_000: "centomila",
    101_000: "centounomila", 180_000: "centottantamila", 999_999: "novecentonovantanovemilanovecentonovantanove",
    1_000_000: "un milione", 1_000_001: "un milione uno", 1_200_000: "un milione duecentomila",
    2_000_000: "due milioni", 21_000_000: "ventun milioni", 23_000_000: "ventitré milioni",
    101_000_000: "centoun milioni", 1_000_000_000: "un miliardo", 3_000_000_000: "tre miliardi",
}  # fmt: skip

EN_NUMBERS = {
    0: "zero", 1: "one", 12: "twelve", 15: "fifteen", 20: "twenty", 21: "twenty-one", 40: "forty",
    99: "ninety-nine", 100: "one hundred", 101: "one hundred one", 180: "one hundred eighty",
    1000: "one thousand", 1001: "one thousand one", 1234: "one thousand two hundred thirty-four",
    21_000: "twenty-one thousand", 100_000: "one hundred thousand",
    999_999: "nine hundred ninety-nine thousand nine hundred ninety-nine",
    1_000_000: "one million", 1_200_034: "one million two hundred thousand thirty-four",
    2_000_000_000: "two billion",
}  # fmt: skip

EUROS = [
    (123_450, "milleduecentotrentaquattro euro e cinquanta centesimi",
     "one thousand two hundred thirty-four euros and fifty cents"),
    (0, "zero euro", "zero euros"),
    (1, "zero euro e un centesimo", "zero euros and one cent"),
    (5, "zero euro e cinque centesimi", "zero euros and five cents"),
    (100, "un euro", "one euro"),
    (101, "un euro e un centesimo", "one euro and one cent"),
    (2_100, "ventuno euro", "twenty-one euros"),
    (3_838, "trentotto euro e trentotto centesimi", "thirty-eight euros and thirty-eight cents"),
    (18_000, "centottanta euro", "one hundred eighty euros"),
    (2_300, "ventitré euro", "twenty-three euros"),
    (10_390, "centotré euro e novanta centesimi", "one hundred three euros and ninety cents"),
    (12_345_678, "centoventitremilaquattrocentocinquantasei euro e settantotto centesimi",
     "one hundred twenty-three thousand four hundred fifty-six euros and seventy-eight cents"),
    (100_000_000, "un milione di euro", "one million euros"),
    (120_000_010, "un milione duecentomila euro e dieci centesimi",
     "one million two hundred thousand euros and ten cents"),
    (2_100_000_000, "ventun milioni di euro", "twenty-one million euros"),
    (-2_550, "meno venticinque euro e cinquanta centesimi", "minus twenty-five euros and fifty cents"),
]  # fmt: skip


@pytest.mark.parametrize(("n", "words"), IT_NUMBERS.items())
def test_italian_numbers(n, words):
    assert number_it(n) == words


@pytest.mark.parametrize(("n", "words"), EN_NUMBERS.items())
def test_english_numbers(n, words):
    assert number_en(n) == words


@pytest.mark.parametrize(("cents", "it", "en"), EUROS)
def test_euros_and_cents(cents, it, en):
    assert euros_it(cents) == it
    assert euros_en(cents) == en


def test_every_number_below_a_thousand_is_distinct_and_elided_correctly():
    seen = {}
    for n in range(1, 1000):
        it = number_it(n)
        assert it not in seen, (n, seen.get(it))
        seen[it] = n
        # No vowel clash is left where Italian elides: "ventiuno", "trentaotto", "centoottanta".
        for clash in ("tiuno", "tauno", "tiotto", "taotto", "oott"):
            assert clash not in it, (n, it)
        assert it.endswith("tré") == (n % 10 == 3 and n != 3 and n % 100 != 13), (n, it)
    assert len({number_en(n) for n in range(1000)}) == 1000


def test_amounts_must_be_integer_cents():
    with pytest.raises(TypeError):
        euros_it(12.5)
    with pytest.raises(TypeError):
        euros_en(True)
