"""QA's findings on table play, each through the API (RULES.md §2, §4, §5, §6)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import IntegrityError

from config.errors import api_exception_handler
from tables.models import Coup

from .conftest import BANKER_WINS

pytestmark = pytest.mark.django_db


# -- 1. the cagnotte never exceeds the banker's winnings (RULES.md §4) -------------------------


@pytest.mark.parametrize(("unit", "bet"), [(10, 5), (10_000, 5), (10_000, 5_000)])
def test_the_cagnotte_rounded_up_never_exceeds_what_the_banker_wins(make_game, tablet, unit, bet):
    game = make_game(
        "venezia", cagnotte_rounding="up", cagnotte_unit_cents=unit, minimum=100_00, bank=100_00
    )
    bettor = game.seat(2)
    answer = tablet.ok(
        tablet.post(
            f"/api/sessions/{game.session.pk}/coups/record/",
            {"bets": [{"patron": bettor.pk, "amount": bet}], "cards": BANKER_WINS, "punta_draws": True},
        ),
        201,
    )
    coup = Coup.objects.get(pk=answer["coup"]["id"])
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker"
    # capped at S rounded down to the unit: 0 here (S is under one unit)
    assert coup.cagnotte == bet // unit * unit == 0
    assert coup.banker_net == bet
    balances = tablet.ok(tablet.get(f"/api/sessions/{game.session.pk}/balances/"))
    assert balances is not None


def test_an_integrity_error_names_its_constraint():
    class CheckViolation(Exception):
        diag = SimpleNamespace(constraint_name="tables_bank_amount_check")

    exc = IntegrityError("boom")
    exc.__cause__ = CheckViolation()
    response = api_exception_handler(exc, {})
    assert response.status_code == 409
    assert response.data["error"]["code"] == "conflict"
    assert response.data["error"]["details"] == {"constraint": "tables_bank_amount_check"}
