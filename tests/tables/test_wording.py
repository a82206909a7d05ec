"""A coup's violations in words (tables.wording): one bracket, never one inside another. The
rule in force goes in the sentence's brackets, so its own name holds none: "punta drew on 6
(punta playing for the table (not banco solo): stand)" nested them, in both languages."""

from __future__ import annotations

import pytest
from django.utils import translation

from tables.wording import RULE_NAMES, violation_text


def _depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
        assert depth >= 0, text
    assert depth == 0, text
    return deepest


def _violation(rule: str, side: str, done: str, *, banker_total: int = 3, third: str | None = "2D") -> dict:
    return {"side": side, "rule": rule, "punta_total": 6, "banker_total": banker_total,
            "punta_third_card": third if side == "banker" else None, "required": "stand", "done": done}  # fmt: skip


CASES = [
    _violation(rule, side, done, banker_total=total, third=third)
    for rule, side in (*((r, "punta") for r in ("punta_several", "punta_banco_solo", "punta_regola")),
                       *((r, "banker") for r in ("banker", "banker_regola")))
    for done in ("draw", "stand")
    for total, third in ((3, "2D"), (3, None), (8, None))
    if side == "banker" or third is not None
]  # fmt: skip


@pytest.mark.parametrize(("language", "expected"), [
    ("en", "punta drew on 6 (punta playing for the table, not banco solo: stand)"),
    ("it", "la punta ha tirato con 6 (punta che gioca per il tavolo, non banco solo: stare)"),
])  # fmt: skip
def test_a_punta_playing_for_the_table_in_one_bracket(language, expected):
    with translation.override(language):
        assert violation_text(_violation("punta_several", "punta", "draw")) == expected
        for v in CASES:
            assert _depth(violation_text(v)) == 1, violation_text(v)
        assert all(_depth(str(name)) == 0 for name in RULE_NAMES.values())
