"""QA's findings on table play, each through the API (RULES.md §2, §4, §5, §6)."""

from __future__ import annotations

import json
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


# -- 5. the offers show the table maximum in force (RULES.md §6) ------------------------------


PUNTA_WINS = ["7H", "6S", "KH", "KD"]


def test_succession_offers_show_the_table_maximum_in_force(make_game, tablet):
    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2, maximum=5000_00)
    sid = game.session.pk
    tablet.ok(
        tablet.post(
            f"/api/sessions/{sid}/coups/record/",
            {"bets": [{"patron": game.seat(2).pk, "amount": 100_00}], "cards": PUNTA_WINS, "punta_draws": False},
        ),
        201,
    )
    state = tablet.ok(tablet.get(f"/api/sessions/{sid}/succession/"))
    offers = state["succession"]["offers"]
    assert offers and all(o["amount_max"] == 5000_00 for o in offers)
    game_state = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))
    assert [o["amount_max"] for o in game_state["succession"]["offers"]] == [5000_00] * len(offers)
    # The offer's terms are those accept applies: above the maximum is refused.
    answer = tablet.post(
        f"/api/successions/{state['succession']['id']}/accept/", {"patron": game.seat(2).pk, "amount": 5000_01}
    )
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "bank_above_maximum"
    answer = tablet.ok(
        tablet.post(
            f"/api/successions/{state['succession']['id']}/accept/", {"patron": game.seat(2).pk, "amount": 5000_00}
        )
    )
    # Answered: the offer keeps the terms it was laid out with.
    assert answer["succession"]["status"] == "taken"


def _lost(game, tablet):
    """The banker loses a coup to seat 2: his bank passes (a new bank, in rotation)."""
    sid = game.session.pk
    tablet.ok(
        tablet.post(
            f"/api/sessions/{sid}/coups/record/",
            {"bets": [{"patron": game.seat(2).pk, "amount": 100_00}], "cards": PUNTA_WINS, "punta_draws": False},
        ),
        201,
    )
    return tablet.ok(tablet.get(f"/api/sessions/{sid}/succession/"))["succession"]


def _terms(tablet, sid) -> list[tuple[str, str | None, int, int | None]]:
    offers = tablet.ok(tablet.get(f"/api/sessions/{sid}/succession/"))["succession"]["offers"]
    return [(o["status"], o["reason"], o["amount_min"], o["amount_max"]) for o in offers]


def test_an_answered_offer_keeps_the_maximum_it_was_answered_under(make_game, tablet):
    """A QA walk: an offer with no bound of its own (a new bank) showed the table maximum
    while it waited, and null ("no maximum") once answered, though that maximum bound the
    answer. It keeps it now, as it keeps its minimum; null only with no maximum in force
    (here: the maximum lifted before seat 3 answers)."""
    from floor import services as floor_services

    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2, maximum=5000_00)
    succ = _lost(game, tablet)
    tablet.ok(tablet.post(f"/api/successions/{succ['id']}/pass/", {"patron": game.seat(2).pk}))
    assert _terms(tablet, game.session.pk) == [
        ("passed", None, 100_00, 5000_00), ("pending", None, 100_00, 5000_00), ("pending", None, 100_00, 5000_00)]  # fmt: skip
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=100_00, maximum=None, reason="no maximum tonight"
    )
    tablet.ok(tablet.post(f"/api/successions/{succ['id']}/accept/", {"patron": game.seat(3).pk, "amount": 6000_00}))
    assert _terms(tablet, game.session.pk) == [
        ("passed", None, 100_00, 5000_00), ("accepted", None, 100_00, None), ("skipped", "taken", 100_00, None)]  # fmt: skip


def test_an_offer_answered_after_the_maximum_changed_keeps_the_one_in_force_then(make_game, tablet):
    from floor import services as floor_services

    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2, maximum=5000_00)
    succ = _lost(game, tablet)
    tablet.ok(tablet.post(f"/api/successions/{succ['id']}/pass/", {"patron": game.seat(2).pk}))
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=200_00, maximum=4000_00, reason="the house"
    )
    # waiting, it shows the maximum in force now; answered, it keeps it
    assert _terms(tablet, game.session.pk)[1:] == [("pending", None, 200_00, 4000_00)] * 2
    answer = tablet.post(f"/api/successions/{succ['id']}/accept/", {"patron": game.seat(3).pk, "amount": 4000_01})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "bank_above_maximum"
    tablet.ok(tablet.post(f"/api/successions/{succ['id']}/accept/", {"patron": game.seat(3).pk, "amount": 4000_00}))
    assert _terms(tablet, game.session.pk) == [
        ("passed", None, 100_00, 5000_00), ("accepted", None, 200_00, 4000_00), ("skipped", "taken", 200_00, 4000_00)]  # fmt: skip


def _banker_wins_then_withdraws(tablet, game) -> None:
    """A coup the banker wins (seat 2 bets 100.00), then the banker withdraws: the succession opens."""
    tablet.ok(
        tablet.post(
            f"/api/sessions/{game.session.pk}/coups/record/",
            {"bets": [{"patron": game.seat(2).pk, "amount": 100_00}], "cards": BANKER_WINS, "punta_draws": True},
        ),
        201,
    )
    tablet.ok(tablet.post(f"/api/banks/{game.bank.pk}/withdraw/"))


def test_a_domestic_offer_at_the_height_keeps_the_maximum_that_bound_it(make_game, tablet):
    """Domestic, after a withdrawal: the height's offer (from the mandatory continuation) has
    no bound of its own but the table maximum; answered, it keeps it."""
    game = make_game("domestic", seated=3, standing=0, min_seats_to_start=2, maximum=5000_00)
    sid = game.session.pk
    _banker_wins_then_withdraws(tablet, game)
    succ = tablet.ok(tablet.get(f"/api/sessions/{sid}/succession/"))["succession"]
    [height] = [o for o in succ["offers"] if o["current"]]
    assert (height["round"], height["amount_max"]) == ("height", 5000_00)
    tablet.ok(tablet.post(f"/api/successions/{succ['id']}/accept/", {"patron": height["patron"]["id"], "amount": 5000_00}))
    offers = tablet.ok(tablet.get(f"/api/sessions/{sid}/succession/"))["succession"]["offers"]
    answered = [o for o in offers if o["status"] != "pending"]
    assert answered and {o["amount_max"] for o in answered} == {5000_00}


def test_the_game_state_says_a_first_bank_waits_for_enough_players(make_game, tablet, commissario):
    """A QA walk: with too few seats taken for the session's first bank, the game state said
    only `no_active_bank`, and `not_enough_players` came from the bank's refusal alone. The
    state says what the opening would answer, with no query more (tests/tables/test_queries)."""
    from floor import services as floor_services
    from floor.models import Seat
    from tests.factories import PatronFactory

    game = make_game("venezia", seated=2, standing=1, bank=None, min_seats_to_start=3)
    sid = game.session.pk
    state = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))
    assert state["cannot_open_because"] == ["no_active_bank", "not_enough_players"]  # a standing one is no seat
    refused = tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(1).pk, "amount": 100_00})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "not_enough_players")
    floor_services.seat_assign(session=game.session, patron=PatronFactory(), seat_number=3, by=commissario)
    assert tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))["cannot_open_because"] == ["no_active_bank"]
    tablet.ok(tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(1).pk, "amount": 100_00}), 201)
    # A later bank is no first bank: the rule is the session's start, not every bank's.
    seat = Seat.objects.get(session=game.session, seat_number=3, left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=commissario)
    tablet.ok(
        tablet.post(
            f"/api/sessions/{sid}/coups/record/",
            {"bets": [{"patron": game.seat(2).pk, "amount": 100_00}], "cards": PUNTA_WINS, "punta_draws": False},
        ),
        201,
    )
    state = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))
    assert state["bank"] is None and state["cannot_open_because"] == ["no_active_bank"]


# -- 6. a succession's lapse reasons are as README says --------------------------------------


def test_an_asta_closed_without_bids_lapses_no_bids_as_the_readme_says(make_game, tablet):
    from pathlib import Path

    from django.conf import settings

    game = make_game("venezia", seated=3, standing=0, min_seats_to_start=2)
    sid = game.session.pk
    _banker_wins_then_withdraws(tablet, game)
    succession = tablet.ok(tablet.get(f"/api/sessions/{sid}/succession/"))["succession"]
    for n in (2, 3):
        tablet.ok(tablet.post(f"/api/successions/{succession['id']}/pass/", {"patron": game.seat(n).pk}))
    auction = tablet.ok(tablet.post(f"/api/sessions/{sid}/auctions/"), 201)["succession"]["auction"]["id"]
    closed = tablet.ok(tablet.post(f"/api/auctions/{auction}/close/"))
    assert closed["succession"]["lapse_reason"] == "no_bids"
    readme = (Path(settings.BASE_DIR) / "README.md").read_text()
    assert '(`lapse_reason: "no_bids"`)' in readme and "none\n  standing (`no_valid_bids`)" in readme


# -- 3. equal highest bets: the first in betting order, from the banker's right (RULES.md §2) --


def _punta_of(tablet, session_id: int, bets) -> int:
    coup_id = tablet.ok(tablet.post(f"/api/sessions/{session_id}/coups/"), 201)["coup"]["id"]
    for patron, amount in bets:
        tablet.ok(tablet.post(f"/api/coups/{coup_id}/bets/", {"patron": patron.pk, "amount": amount}), 201)
    tablet.ok(tablet.post(f"/api/coups/{coup_id}/rien-ne-va-plus/"))
    return Coup.objects.get(pk=coup_id).punta_id


def test_equal_highest_bets_go_to_the_first_in_betting_order_not_the_first_entered(make_game, tablet):
    game = make_game("venezia", seated=8, standing=2)  # the banker at seat 1
    sid = game.session.pk
    # seat 5 is entered first, but seat 2 bets before him (the banker's right: 2, 3, ... 8)
    assert _punta_of(tablet, sid, [(game.seat(5), 300_00), (game.seat(2), 300_00), (game.seat(3), 100_00)]) == (
        game.seat(2).pk
    )


def test_equal_highest_seated_beats_standing_then_standing_in_entry_order(make_game, tablet):
    game = make_game("venezia", seated=8, standing=2)
    sid = game.session.pk
    first = game.standing[0]
    assert _punta_of(tablet, sid, [(first, 300_00), (game.seat(8), 300_00)]) == game.seat(8).pk


def test_equal_highest_standing_players_in_the_order_they_bet(make_game, tablet):
    game = make_game("venezia", seated=8, standing=2)
    first, second = game.standing
    assert _punta_of(tablet, game.session.pk, [(second, 300_00), (first, 300_00)]) == second.pk


# -- 4. classic tie: a carried banco covers the whole bank (RULES.md §3.2, seed 000) ----------


TIE = ["7H", "7S", "KH", "KD"]


def test_a_banco_carried_from_a_classic_tie_is_not_displaced(make_game, tablet, refused_api):
    game = make_game("classic", seated=8, standing=1)  # banker at seat 1
    sid = game.session.pk
    coup = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]["id"]
    tablet.ok(tablet.post(f"/api/coups/{coup}/banco/", {"patron": game.seat(5).pk}), 201)
    tablet.ok(tablet.post(f"/api/coups/{coup}/rien-ne-va-plus/"))
    for card in TIE:
        answer = tablet.ok(tablet.post(f"/api/coups/{coup}/cards/", {"card": card}))
    answer = tablet.ok(tablet.post(f"/api/coups/{coup}/declaration/", {"draws": False}))
    answer = tablet.ok(tablet.post(f"/api/coups/{coup}/banker-decision/", {"draws": False}))
    assert answer["coup"]["winner"] == "tie"
    nxt = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]["id"]
    # Seat 2 is nearer the banker than seat 5, and would win a banco call in turn: refused.
    refused_api(409, "banco_carried", lambda: tablet.post(f"/api/coups/{nxt}/banco/", {"patron": game.seat(2).pk}))
    refused_api(
        409, "banco_carried",
        lambda: tablet.post(f"/api/coups/{nxt}/bets/", {"patron": game.seat(3).pk, "amount": 100_00}),
    )  # fmt: skip
    refused_api(
        409, "banco_carried",
        lambda: tablet.post(f"/api/coups/{nxt}/banco/", {"patron": game.standing[0].pk}),
    )  # fmt: skip
    tablet.ok(tablet.post(f"/api/coups/{nxt}/rien-ne-va-plus/"))
    played = Coup.objects.get(pk=nxt)
    assert played.banco_solo and played.punta_id == game.seat(5).pk


# -- 2. the first bank: the first occupied seat from seat 1, who may decline it (RULES.md §5, §6) --


def _seat_patrons(game, numbers):
    from floor import services as floor_services
    from tests.factories import PatronFactory

    return {
        n: floor_services.seat_assign(
            session=game.session, patron=PatronFactory(), seat_number=n, by=game.commissario
        ).patron
        for n in numbers
    }


@pytest.mark.parametrize("profile", ["venezia", "classic", "domestic", "chemmy-fi"])
def test_the_first_bank_goes_to_the_first_occupied_seat_when_seat_1_is_empty(make_game, tablet, refused_api, profile):
    game = make_game(profile, seated=0, standing=0, bank=None)
    sid = game.session.pk
    patrons = _seat_patrons(game, range(2, 9))
    state = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))
    assert state["rotation"]["next_seat"] == 2
    err = refused_api(
        400, "not_first_banker_seat",
        lambda: tablet.post(f"/api/sessions/{sid}/banks/", {"patron": patrons[3].pk, "amount": 1000_00}),
    )  # fmt: skip
    assert err["details"]["first_banker_seat"] == 2
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/banks/", {"patron": patrons[2].pk, "amount": 1000_00}), 201)
    assert answer["bank"]["banker"]["id"] == patrons[2].pk
    assert answer["game"]["rotation"]["turn_seat"] == 2


def test_the_player_whose_turn_it_is_may_decline_the_first_bank(make_game, tablet, refused_api):
    from audit.models import AuditEvent

    game = make_game("venezia", seated=8, standing=1, bank=None)
    sid = game.session.pk
    url = f"/api/sessions/{sid}/banks/first/pass/"
    assert tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))["rotation"]["next_seat"] == 1
    # Not his turn: refused, nothing written.
    err = refused_api(400, "not_first_banker_seat", lambda: tablet.post(url, {"patron": game.seat(3).pk}))
    assert err["details"]["first_banker_seat"] == 1
    refused_api(400, "not_first_banker_seat", lambda: tablet.post(url, {"patron": game.standing[0].pk}))
    answer = tablet.ok(tablet.post(url, {"patron": game.seat(1).pk}), 201)
    assert answer["passed"]["seat_number"] == 1 and answer["passed"]["next_seat"] == 2
    assert answer["game"]["rotation"]["next_seat"] == 2
    event = json.loads(AuditEvent.objects.filter(action="bank.first_declined").get().payload_json)
    assert event["patron"] == game.seat(1).pk and event["next_seat"] == 2
    # Seat 1 declined: he may not open it now, seat 2 may decline too, then seat 3 opens.
    refused_api(
        400, "not_first_banker_seat",
        lambda: tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(1).pk, "amount": 1000_00}),
    )  # fmt: skip
    refused_api(400, "not_first_banker_seat", lambda: tablet.post(url, {"patron": game.seat(1).pk}))
    assert tablet.ok(tablet.post(url, {"patron": game.seat(2).pk}), 201)["passed"]["next_seat"] == 3
    bank = tablet.ok(
        tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(3).pk, "amount": 1000_00}), 201
    )
    assert bank["bank"]["banker"]["id"] == game.seat(3).pk and bank["bank"]["origin"] == "first"
    refused_api(409, "first_bank_opened", lambda: tablet.post(url, {"patron": game.seat(4).pk}))


def test_when_every_seated_player_declines_nobody_opens_the_first_bank(make_game, tablet, refused_api):
    game = make_game("venezia", seated=6, standing=0, bank=None)
    sid = game.session.pk
    for n in range(1, 7):
        tablet.ok(tablet.post(f"/api/sessions/{sid}/banks/first/pass/", {"patron": game.seat(n).pk}), 201)
    assert tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))["rotation"]["next_seat"] is None
    refused_api(
        409, "first_bank_declined_by_all",
        lambda: tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(1).pk, "amount": 1000_00}),
    )  # fmt: skip
