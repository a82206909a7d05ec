"""Money typed on the screens: euros to integer cents, and every odd input a form error
(BadForm, shown to the user), never an exception that would be a 500."""

from __future__ import annotations

import pytest

from tables.views_common import BadForm, euros_to_cents, int_field


@pytest.mark.parametrize(
    ("raw", "cents"),
    [("150", 150_00), ("150.5", 150_50), ("150,50", 150_50), (" 1 000 ", 1000_00), ("0", 0),
     ("10000000000", 10**12)],
)
def test_euros_become_cents(raw, cents):
    assert euros_to_cents(raw) == cents


@pytest.mark.parametrize(
    "raw",
    ["", None, "abc", "1.005", "NaN", "sNaN", "-sNaN", "Infinity", "-Inf", "1e30", "10000000000.01", "-1e11",
     "1e9", "1E2", "0x10", "1.2.3", "--5", "+150", "+-5", "-+5", "-0", "-0,00", "- 0.0", "-€\xa00"],
)
def test_odd_amounts_are_form_errors(raw):
    with pytest.raises(BadForm) as refused:
        euros_to_cents(raw, field="counted")
    assert refused.value.code == "bad_amount"
    assert refused.value.details == {"counted": raw}


@pytest.mark.parametrize(
    ("raw", "english", "italian"),
    [
        ("3.000", "three decimals", 3000_00),  # Italian thousands; in English 3.000 is refused
        ("3,000", 3000_00, "three decimals"),
        ("1.500,50", 1500_50, 1500_50),  # both separators: the last one is the decimal one
        ("1,500.50", 1500_50, 1500_50),
        ("1.000.000", 1_000_000_00, 1_000_000_00),  # a repeated separator groups thousands
        ("1,000,000", 1_000_000_00, 1_000_000_00),
        ("150.50", 150_50, 150_50),  # two decimals: never thousands, whatever the language
        ("150,5", 150_50, 150_50),
        ("2\u202f000", 2000_00, 2000_00),  # as the pages print it (narrow no-break space)
        ("2\u00a0000,50", 2000_50, 2000_50),
        ("€\xa0150", 150_00, 150_00),
        ("-1.500", "three decimals", -1500_00),
    ],
)
def test_amounts_are_read_as_the_pages_language_writes_them(raw, english, italian):
    from django.utils import translation

    for language, expected in (("en", english), ("it", italian)):
        with translation.override(language):
            if expected == "three decimals":
                with pytest.raises(BadForm) as refused:
                    euros_to_cents(raw)
                said = {"en": "at most two decimals", "it": "al massimo due decimali"}[language]
                assert refused.value.code == "bad_amount" and said in str(refused.value.message), (language, raw)
            else:
                assert euros_to_cents(raw) == expected, (language, raw)


@pytest.mark.parametrize(
    "raw",
    ["1.50.000", "12,34.5", "1,5,00", "1.5,00.0", ",", "€", "1.500,5.0", "15.00.00",
     "0.001", "000.100", "0,001", "1 5", "150 50", "1 500,5 0", "1 500.000,5", "1 500,000,5", "2 000 ,5"],
)
def test_badly_grouped_amounts_are_refused_in_both_languages(raw):
    from django.utils import translation

    for language in ("en", "it"):
        with translation.override(language), pytest.raises(BadForm):
            euros_to_cents(raw)


@pytest.mark.parametrize("raw", ["2 000, 5", "1 000. 5", "2\u202f000,5 0", "1 500, 50", "1 000 000. 0"])
def test_a_space_among_the_decimals_is_refused_even_when_the_whole_part_is_grouped(raw):
    from django.utils import translation

    for language in ("en", "it"):
        with translation.override(language), pytest.raises(BadForm) as refused:
            euros_to_cents(raw)
        assert refused.value.code == "bad_amount"


@pytest.mark.parametrize("raw", ["+8", "+0", "+-1", "8.0", "\uff18", " 8 x"])
def test_odd_whole_numbers_are_form_errors(raw):
    # "+8" seated a patron at seat 8: the API refuses a "+", so do the forms.
    with pytest.raises(BadForm) as refused:
        int_field(raw, field="seat_number")
    assert refused.value.code == "bad_input"


@pytest.mark.parametrize(("raw", "value"), [("8", 8), (" 8 ", 8), ("08", 8), ("-3", -3), ("0", 0)])
def test_whole_numbers(raw, value):
    assert int_field(raw, field="seat_number") == value
