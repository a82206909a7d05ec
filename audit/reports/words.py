"""Amounts in words, for the control register's total (RULES.md §8, art. 72): euros and
cents in Italian and in English. Pure Python; amounts are integer cents.

Italian: one word below a million ("milleduecentotrentaquattro"), the tens lose their
final vowel before "uno" and "otto" ("ventuno", "trentotto"), "cento" before "otto" and
"ottanta" ("centotto", "centottanta"), a final "tre" of a compound is accented
("ventitré", "centotré"); "milione" / "miliardo" are separate words, "un" before them and
"ventun milioni"; round millions take "di euro". "euro" is invariable; 1 is "un euro",
"un centesimo".

English: "one thousand two hundred thirty-four euros and fifty cents" (no "and" inside the
number, hyphenated tens)."""

from __future__ import annotations

_IT_UNITS = (
    "", "uno", "due", "tre", "quattro", "cinque", "sei", "sette", "otto", "nove", "dieci",
    "undici", "dodici", "tredici", "quattordici", "quindici", "sedici", "diciassette", "diciotto",
    "diciannove",
)  # fmt: skip
_IT_TENS = ("", "", "venti", "trenta", "quaranta", "cinquanta", "sessanta", "settanta", "ottanta", "novanta")

_EN_UNITS = (
    "", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_EN_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_EN_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (10**3, "thousand"))


def _it_below_100(n: int) -> str:
    if n < 20:
        return _IT_UNITS[n]
    tens, unit = divmod(n, 10)
    word = _IT_TENS[tens]
    if unit in (1, 8):  # ventuno, trentotto: the vowels meet, the ten's drops
        word = word[:-1]
    return word + _IT_UNITS[unit]


def _it_below_1000(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    head = "" if hundreds == 0 else "cento" if hundreds == 1 else _IT_UNITS[hundreds] + "cento"
    tail = _it_below_100(rest)
    if head and tail.startswith("ott"):  # centotto, centottanta, duecentottantuno
        head = head[:-1]
    return head + tail


def _it_below_million(n: int) -> str:
    thousands, rest = divmod(n, 1000)
    head = "" if thousands == 0 else "mille" if thousands == 1 else _it_below_1000(thousands) + "mila"
    return head + _it_below_1000(rest)


def _accent(word: str) -> str:
    # A compound ending in "tre" is written "tré": ventitré, centotré, milletré.
    return word[:-3] + "tré" if word.endswith("tre") and word != "tre" else word


def _it_apocope(word: str) -> str:
    # Before "milioni" / "miliardi": "ventun milioni", "trentun miliardi".
    return word[:-1] if word.endswith("uno") else word


def number_it(n: int) -> str:
    """A whole number in Italian words."""
    if n < 0:
        return "meno " + number_it(-n)
    if n == 0:
        return "zero"
    parts: list[str] = []
    billions, rest = divmod(n, 10**9)
    millions, rest = divmod(rest, 10**6)
    for count, one, many in ((billions, "un miliardo", "miliardi"), (millions, "un milione", "milioni")):
        if count == 1:
            parts.append(one)
        elif count > 1:
            parts.append(f"{_it_apocope(number_it(count))} {many}")
    if rest:
        parts.append(_accent(_it_below_million(rest)))
    return " ".join(parts)


def number_en(n: int) -> str:
    """A whole number in English words (short scale)."""
    if n < 0:
        return "minus " + number_en(-n)
    if n == 0:
        return "zero"
    parts: list[str] = []
    for scale, name in _EN_SCALES:
        if n >= scale:
            count, n = divmod(n, scale)
            parts.append(f"{number_en(count)} {name}")
    hundreds, rest = divmod(n, 100)
    if hundreds:
        parts.append(f"{_EN_UNITS[hundreds]} hundred")
    if rest >= 20:
        tens, unit = divmod(rest, 10)
        parts.append(_EN_TENS[tens] + (f"-{_EN_UNITS[unit]}" if unit else ""))
    elif rest:
        parts.append(_EN_UNITS[rest])
    return " ".join(parts)


def _split(cents: int) -> tuple[str, int, int]:
    if isinstance(cents, bool) or not isinstance(cents, int):
        raise TypeError(f"an amount is integer cents, got {cents!r}")
    sign = "-" if cents < 0 else ""
    euros, rest = divmod(abs(cents), 100)
    return sign, euros, rest


def euros_it(cents: int) -> str:
    """1234_50 -> "milleduecentotrentaquattro euro e cinquanta centesimi"."""
    sign, euros, rest = _split(cents)
    if euros == 1:
        words = "un euro"
    else:
        # "due milioni di euro", but "un milione duecentomila euro".
        of = " di" if euros >= 10**6 and euros % 10**6 == 0 else ""
        words = f"{number_it(euros)}{of} euro"
    if rest:
        words += " e " + ("un centesimo" if rest == 1 else f"{number_it(rest)} centesimi")
    return ("meno " if sign else "") + words


def euros_en(cents: int) -> str:
    """1234_50 -> "one thousand two hundred thirty-four euros and fifty cents"."""
    sign, euros, rest = _split(cents)
    words = f"{number_en(euros)} {'euro' if euros == 1 else 'euros'}"
    if rest:
        words += f" and {number_en(rest)} {'cent' if rest == 1 else 'cents'}"
    return ("minus " if sign else "") + words
