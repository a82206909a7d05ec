"""Money typed on the screens: euros to integer cents, and every odd input a form error
(BadForm, shown to the user), never an exception that would be a 500."""

from __future__ import annotations

import pytest

from tables.views_common import BadForm, euros_to_cents


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
     "1e9", "1E2", "0x10", "1.2.3", "--5"],
)
def test_odd_amounts_are_form_errors(raw):
    with pytest.raises(BadForm) as refused:
        euros_to_cents(raw, field="counted")
    assert refused.value.code == "bad_amount"
    assert refused.value.details == {"counted": raw}
