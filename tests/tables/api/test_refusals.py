"""Every bad input through the API: its 4xx and stable code, nothing written (no tables row,
no audit event; only the refusal's own idempotency key, holding that answer), never a 500."""

from __future__ import annotations

import pytest

from floor import services as floor_services
from floor.roles import Role
from tests.factories import UserFactory

from .conftest import BANKER_WINS, PUNTA_WINS, TIE, Tablet, error

pytestmark = pytest.mark.django_db


@pytest.fixture
def betting(game, tablet):
    return tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]


@pytest.fixture
def closed(game, tablet, betting):
    tablet.ok(tablet.post(f"/api/coups/{betting}/bets/", {"patron": game.seat(2).pk, "amount": 100_00}), 201)
    tablet.ok(tablet.post(f"/api/coups/{betting}/rien-ne-va-plus/"))
    return betting


def deal(tablet, coup_id, cards):
    for card in cards:
        tablet.ok(tablet.post(f"/api/coups/{coup_id}/cards/", {"card": card}))


def test_bet_after_rien_ne_va_plus(game, tablet, closed, refused_api):
    body = {"patron": game.seat(3).pk, "amount": 10_00}
    refused_api(409, "bet_after_rien_ne_va_plus", lambda: tablet.post(f"/api/coups/{closed}/bets/", body))
    refused_api(409, "bet_after_rien_ne_va_plus",
                lambda: tablet.post(f"/api/coups/{closed}/banco/", {"patron": game.seat(3).pk}))  # fmt: skip
    refused_api(409, "coup_not_betting", lambda: tablet.post(f"/api/coups/{closed}/rien-ne-va-plus/"))


def test_bet_over_the_bank(game, tablet, betting, refused_api):
    tablet.ok(tablet.post(f"/api/coups/{betting}/bets/", {"patron": game.seat(2).pk, "amount": 900_00}), 201)
    err = refused_api(
        400,
        "bet_over_bank",
        lambda: tablet.post(f"/api/coups/{betting}/bets/", {"patron": game.seat(3).pk, "amount": 100_01}),
    )
    assert err["details"] == {"amount": 100_01, "bank": 1000_00, "covered": 900_00, "open": 100_00}


def test_bank_below_the_minimum_and_other_bank_refusals(make_game, tablet, refused_api):
    game = make_game("venezia", bank=None)
    url = f"/api/sessions/{game.session.pk}/banks/"
    err = refused_api(400, "bank_below_minimum", lambda: tablet.post(url, {"patron": game.seat(1).pk, "amount": 99_99}))
    assert err["details"] == {"amount": 99_99, "minimum": 100_00}
    refused_api(400, "bad_amount", lambda: tablet.post(url, {"patron": game.seat(1).pk, "amount": 0}))
    refused_api(400, "not_first_banker_seat", lambda: tablet.post(url, {"patron": game.seat(2).pk, "amount": 100_00}))
    tablet.ok(tablet.post(url, {"patron": game.seat(1).pk, "amount": 100_00}), 201)
    refused_api(409, "bank_already_active", lambda: tablet.post(url, {"patron": game.seat(2).pk, "amount": 100_00}))


def test_a_fourth_card_to_a_side(game, tablet, closed, refused_api):
    six = ["KH", "5S", "3C", "KD", "2S", "3D"]  # punta 3 draws -> 5; banker 5 draws -> 8: he wins
    deal(tablet, closed, six[:4])
    tablet.ok(tablet.post(f"/api/coups/{closed}/declaration/", {"draws": True}))
    deal(tablet, closed, six[4:])  # the punta's third, then the banker's (he drew)
    refused_api(400, "too_many_cards", lambda: tablet.post(f"/api/coups/{closed}/cards/", {"card": "9D"}))
    sid = game.session.pk
    body = {"cards": [*six, "9D"], "punta_draws": True, "bets": [{"patron": game.seat(2).pk, "amount": 10_00}]}
    refused_api(400, "too_many_cards", lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", body))


def test_an_extra_card_in_a_one_shot_coup_that_waits_for_its_reconstruction(game, tablet, refused_api):
    """The as-played coup is complete and pending (the punta alla Regola stood on 4): a card
    after its last is refused as too many, not as a step of the pending coup; the
    reconstruction's shoe cards go in next_cards."""
    sid = game.session.pk
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": game.seat(2).pk, "declared": True}))
    body = {"cards": ["2H", "KS", "2C", "5D", "9D", "3H"], "punta_draws": False,
            "bets": [{"patron": game.seat(2).pk, "amount": 100_00}]}  # fmt: skip
    err = refused_api(400, "too_many_cards", lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", body))
    assert err["details"]["count"] == 5


def test_card_after_a_natural_and_declaration_order(game, tablet, closed, refused_api):
    deal(tablet, closed, ["KH", "5S", "3C"])
    refused_api(400, "cards_missing", lambda: tablet.post(f"/api/coups/{closed}/declaration/", {"draws": True}))
    deal(tablet, closed, ["2D"])
    refused_api(400, "declaration_required", lambda: tablet.post(f"/api/coups/{closed}/cards/", {"card": "9D"}))
    refused_api(400, "decision_not_expected",
                lambda: tablet.post(f"/api/coups/{closed}/banker-decision/", {"draws": False}))  # fmt: skip


def test_cards_the_shoe_cannot_hold(game, tablet, closed, refused_api):
    for _ in range(6):
        tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/void-cards/", {"card": "AS", "reason": "seen"}), 201)
    refused_api(400, "card_exhausted", lambda: tablet.post(f"/api/coups/{closed}/cards/", {"card": "AS"}))
    for bad in ("ZZ", "1S", "", "AS9", 5):
        code = "invalid_input" if bad == "" else "bad_card"
        refused_api(400, code, lambda bad=bad: tablet.post(f"/api/coups/{closed}/cards/", {"card": bad}))
    refused_api(400, "card_exhausted",
                lambda: tablet.post(f"/api/sessions/{game.session.pk}/void-cards/", {"card": "AS", "reason": "x"}))  # fmt: skip


def test_betting_before_the_cards(game, tablet, betting, refused_api):
    refused_api(409, "betting_open", lambda: tablet.post(f"/api/coups/{betting}/cards/", {"card": "AS"}))
    refused_api(400, "no_bets", lambda: tablet.post(f"/api/coups/{betting}/rien-ne-va-plus/"))
    refused_api(409, "reconstruction_not_pending",
                lambda: tablet.post(f"/api/coups/{betting}/reconstruction/card/", {"card": "AS"}))  # fmt: skip
    refused_api(409, "coup_in_progress", lambda: tablet.post(f"/api/sessions/{game.session.pk}/coups/"))
    refused_api(409, "coup_in_progress",
                lambda: tablet.post(f"/api/sessions/{game.session.pk}/shoes/", {"number": "S-2"}))  # fmt: skip
    refused_api(409, "coup_in_progress", lambda: tablet.post(f"/api/banks/{game.bank.pk}/withdraw/"))


def test_a_sabot_in_play_at_another_table(make_game, tablet, refused_api):
    one, two = make_game("venezia"), make_game("venezia")
    other = two.session.shoe_number  # the shoe in play at table two
    two_tablet = Tablet(two.capo)
    err = refused_api(409, "shoe_in_use",
                      lambda: tablet.post(f"/api/sessions/{one.session.pk}/shoes/", {"number": other}))  # fmt: skip
    assert err["details"] == {"shoe_number": other, "session": two.session.pk}
    refused_api(409, "shoe_in_use",  # a shoe's number is the same whatever its case
                lambda: tablet.post(f"/api/sessions/{one.session.pk}/shoes/", {"number": f" {other.lower()} "}))  # fmt: skip
    # the same sabot reshuffled at its own table, then free once another is loaded there
    two_tablet.ok(two_tablet.post(f"/api/sessions/{two.session.pk}/shoes/", {"number": other}), 201)
    two_tablet.ok(two_tablet.post(f"/api/sessions/{two.session.pk}/shoes/", {"number": "S-99"}), 201)
    tablet.ok(tablet.post(f"/api/sessions/{one.session.pk}/shoes/", {"number": other}), 201)


def test_coup_on_an_interrupted_or_closed_table(game, tablet, commissario, refused_api):
    sid = game.session.pk
    body = {"cards": TIE, "punta_draws": False, "bets": [{"patron": game.seat(2).pk, "amount": 10_00}]}
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="dispute")
    refused_api(409, "session_interrupted", lambda: tablet.post(f"/api/sessions/{sid}/coups/"))
    refused_api(409, "session_interrupted", lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", body))
    floor_services.table_session_resume(session=game.session, by=commissario)
    floor_services.table_session_close(session=game.session, by=commissario)
    refused_api(409, "session_closed", lambda: tablet.post(f"/api/sessions/{sid}/coups/"))
    refused_api(409, "session_closed", lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", body))
    refused_api(409, "session_closed",
                lambda: tablet.post(f"/api/sessions/{sid}/regola/", {"patron": game.seat(2).pk, "declared": True}))  # fmt: skip


def test_capo_partita_of_another_table_by_id_guessing(game, make_game, refused_api):
    # Another Capo Partita runs table "3"; he tries the ids of this table's session, coup, bank.
    other_capo = UserFactory(roles=[Role.CAPO_PARTITA])
    mine = make_game("venezia")
    mine.session.capo_partita = other_capo
    mine.session.save(update_fields=["capo_partita"])
    intruder = Tablet(other_capo)
    own = Tablet(game.capo)
    coup = own.ok(own.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]
    sid, bid = game.session.pk, game.bank.pk
    for url, body in [
        (f"/api/sessions/{sid}/coups/", {}),
        (f"/api/sessions/{sid}/coups/record/", {"cards": TIE, "punta_draws": False}),
        (f"/api/coups/{coup}/bets/", {"patron": game.seat(2).pk, "amount": 10_00}),
        (f"/api/coups/{coup}/banco/", {"patron": game.seat(2).pk}),
        (f"/api/banks/{bid}/withdraw/", {}),
        (f"/api/sessions/{sid}/void-cards/", {"card": "AS", "reason": "x"}),
        (f"/api/sessions/{sid}/bars/", {"patron": game.seat(2).pk, "reason": "x"}),
    ]:
        refused_api(403, "permission_denied", lambda url=url, body=body: intruder.post(url, body))
    # ... and his own table works.
    intruder.ok(intruder.post(f"/api/sessions/{mine.session.pk}/coups/"), 201)


def test_a_barred_punta(game, tablet, betting, refused_api):
    tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/bars/", {"patron": game.seat(3).pk, "reason": "faux tirage"}), 201)
    refused_api(400, "patron_barred", lambda: tablet.post(f"/api/coups/{betting}/banco/", {"patron": game.seat(3).pk}))
    refused_api(400, "patron_barred", lambda: tablet.post(
        f"/api/coups/{betting}/bets/", {"patron": game.seat(3).pk, "kind": "avec_la_table"}))  # fmt: skip
    refused_api(409, "patron_already_barred",
                lambda: tablet.post(f"/api/sessions/{game.session.pk}/bars/", {"patron": game.seat(3).pk, "reason": "again"}))  # fmt: skip
    # Barred, he may still bet; alone, nobody may hold the cards.
    tablet.ok(tablet.post(f"/api/coups/{betting}/bets/", {"patron": game.seat(3).pk, "amount": 10_00}), 201)
    refused_api(400, "no_eligible_punta", lambda: tablet.post(f"/api/coups/{betting}/rien-ne-va-plus/"))


def test_one_shot_refusals_write_nothing(game, tablet, refused_api):
    url = f"/api/sessions/{game.session.pk}/coups/record/"
    p2, p3 = game.seat(2).pk, game.seat(3).pk
    cases = [
        (400, "declaration_required", {"cards": BANKER_WINS, "bets": [{"patron": p2, "amount": 10_00}]}),
        (400, "cards_missing", {"cards": BANKER_WINS[:3], "bets": [{"patron": p2, "amount": 10_00}]}),
        (400, "no_bets", {"cards": PUNTA_WINS, "punta_draws": False}),
        (400, "bet_over_bank", {"cards": PUNTA_WINS, "punta_draws": False,
                                "bets": [{"patron": p2, "amount": 600_00}, {"patron": p3, "amount": 400_01}]}),
        (409, "banco_called", {"cards": PUNTA_WINS, "punta_draws": False, "banco": [p2],
                               "bets": [{"patron": p3, "amount": 10_00}]}),
        (400, "banker_cannot_bet", {"cards": PUNTA_WINS, "punta_draws": False,
                                    "bets": [{"patron": game.seat(1).pk, "amount": 10_00}]}),
        (400, "unused_next_cards", {"cards": PUNTA_WINS, "punta_draws": False, "next_cards": ["AS"],
                                    "bets": [{"patron": p2, "amount": 10_00}]}),
        (400, "unused_reconstruction", {"cards": PUNTA_WINS, "punta_draws": False,
                                        "reconstruction": {"banker_draws": True},
                                        "bets": [{"patron": p2, "amount": 10_00}]}),
        (400, "invalid_input", {"cards": PUNTA_WINS, "punta_draws": False, "reconstruction": {"banker_draw": False},
                                "bets": [{"patron": p2, "amount": 10_00}]}),
        (400, "invalid_input", {"cards": PUNTA_WINS, "bets": [{"patron": 10**9, "amount": 10_00}]}),
        (400, "invalid_input", {"cards": "KH 5S 3C 2D"}),
        (400, "invalid_input", {"bets": [{"patron": p2, "amount": 10_00}]}),
        (400, "invalid_input", {"cards": PUNTA_WINS, "punta_draws": "perhaps"}),
        (400, "invalid_input", {"cards": PUNTA_WINS, "bets": [{"patron": p2, "amount": "ten"}]}),
        (400, "invalid_input", {"cards": PUNTA_WINS, "bets": [{"patron": p2, "amount": 10**13}]}),
        (400, "invalid_input", {"cards": PUNTA_WINS, "bets": [{"patron": p2, "kind": "banco"}]}),
        (400, "invalid_input", ["not", "an", "object"]),
    ]  # fmt: skip
    for status, code, body in cases:
        refused_api(status, code, lambda body=body: tablet.post(url, body))


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"patron": "x"},
        {"patron": 10**9, "amount": 1},
        {"patron": None},
        {"amount": -1, "patron": 1},
        {"card": None},
        {"card": ["AS"]},
        {"draws": "maybe"},
        {"draws": None},
        {"side": "house", "draws": True},
        {"number": "x" * 41},
        {"decks": "six", "number": "S"},
        {"burn": "AS"},
        {"reason": "x" * 201, "patron": 1, "card": "AS"},
    ],
)
def test_wrong_types_and_missing_fields_are_400s(game, tablet, betting, refused_api, body):
    sid, cid = game.session.pk, betting
    for url in [
        f"/api/sessions/{sid}/shoes/",
        f"/api/sessions/{sid}/void-cards/",
        f"/api/sessions/{sid}/banks/",
        f"/api/coups/{cid}/banco/",
        f"/api/coups/{cid}/bets/",
        f"/api/coups/{cid}/cards/",
        f"/api/coups/{cid}/declaration/",
        f"/api/coups/{cid}/banker-decision/",
        f"/api/coups/{cid}/reconstruction/card/",
        f"/api/coups/{cid}/reconstruction/decision/",
        f"/api/sessions/{sid}/regola/",
        f"/api/sessions/{sid}/bars/",
        f"/api/sessions/{sid}/coups/record/",
    ]:
        response = tablet.post(url, body)
        assert 400 <= response.status_code < 500, (url, body, response.status_code, response.content)
        assert "code" in response.json()["error"]


def test_no_idempotency_key_and_unknown_ids(game, tablet, betting, refused_api):
    sid, cid, bid = game.session.pk, betting, game.bank.pk
    posts = [
        f"/api/sessions/{sid}/shoes/", f"/api/sessions/{sid}/void-cards/", f"/api/sessions/{sid}/banks/",
        f"/api/banks/{bid}/withdraw/", f"/api/sessions/{sid}/coups/", f"/api/sessions/{sid}/coups/record/",
        f"/api/coups/{cid}/banco/", f"/api/coups/{cid}/bets/", f"/api/coups/{cid}/rien-ne-va-plus/",
        f"/api/coups/{cid}/cards/", f"/api/coups/{cid}/declaration/", f"/api/coups/{cid}/banker-decision/",
        f"/api/coups/{cid}/reconstruction/card/", f"/api/coups/{cid}/reconstruction/decision/",
        f"/api/sessions/{sid}/regola/", f"/api/sessions/{sid}/bars/",
    ]  # fmt: skip
    for url in posts:
        refused_api(400, "idempotency_key_required", lambda url=url: tablet.post(url, {}, key=False))
        refused_api(400, "bad_idempotency_key", lambda url=url: tablet.post(url, {}, key="\u00e9t\u00e9"))
        missing = url.replace(f"/{sid}/", "/999999/").replace(f"/{cid}/", "/999999/").replace(f"/{bid}/", "/999999/")
        refused_api(404, "not_found", lambda missing=missing: tablet.post(missing, {}))
    for url in ["/api/sessions/999999/game/", "/api/sessions/999999/balances/", "/api/sessions/999999/banks/",
                "/api/sessions/999999/coups/", "/api/coups/999999/"]:  # fmt: skip
        assert error(tablet.get(url)) == "not_found"


def test_malformed_json_and_bad_filters(game, tablet, betting):
    response = tablet.client.post(
        f"/api/coups/{betting}/bets/", data="{not json", content_type="application/json", HTTP_IDEMPOTENCY_KEY="k1"
    )
    assert (response.status_code, error(response)) == (400, "malformed_request")
    response = tablet.get(f"/api/sessions/{game.session.pk}/coups/", state="nonsense")
    assert (response.status_code, error(response)) == (400, "invalid_input")
    response = tablet.get(f"/api/sessions/{game.session.pk}/coups/", page="99")
    assert (response.status_code, error(response)) == (404, "not_found")


def test_a_player_whose_money_is_on_the_table_keeps_his_place(game, tablet, commissario, api_client_for, refused_api):
    """RULES.md §6: no places at two tables; the banker withdraws first, a bettor waits for
    the settlement."""
    from floor.models import Seat

    floor = api_client_for(commissario)
    banker_seat = Seat.objects.get(session=game.session, patron=game.banker, left_at__isnull=True)
    bettor_seat = Seat.objects.get(session=game.session, patron=game.seat(2), left_at__isnull=True)
    err = refused_api(409, "patron_holds_the_bank", lambda: floor.post(f"/api/seats/{banker_seat.pk}/release/",
                      HTTP_IDEMPOTENCY_KEY="rel-1"))  # fmt: skip
    assert err["details"] == {"patron": game.banker.pk, "bank": game.bank.pk}
    coup = tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]
    tablet.ok(tablet.post(f"/api/coups/{coup}/bets/", {"patron": game.seat(2).pk, "amount": 100_00}), 201)
    refused_api(409, "patron_in_coup", lambda: floor.post(f"/api/seats/{bettor_seat.pk}/release/",
                HTTP_IDEMPOTENCY_KEY="rel-2"))  # fmt: skip
    other = Seat.objects.get(session=game.session, patron=game.seat(3), left_at__isnull=True)
    assert floor.post(f"/api/seats/{other.pk}/release/", HTTP_IDEMPOTENCY_KEY="rel-3").status_code == 200


def test_a_card_with_the_count_the_tablet_saw(tablet, closed):
    """`expect_cards`: a card from a tablet that had not seen the last one is refused."""
    coup = closed
    ok = tablet.post(f"/api/coups/{coup}/cards/", {"card": "9D", "expect_cards": 0})
    assert ok.status_code == 200, ok.json()
    stale = tablet.post(f"/api/coups/{coup}/cards/", {"card": "8D", "expect_cards": 0})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "coup_moved_on"
    assert tablet.post(f"/api/coups/{coup}/cards/", {"card": "8D", "expect_cards": 7}).status_code == 400


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=BoUnDaRy"])
def test_a_form_body_without_the_decision_is_a_400_not_a_stand(game, tablet, closed, refused_api, content_type):
    # DRF reads a boolean missing from a form body as false: "junk=1" recorded the punta's "non".
    deal(tablet, closed, ["2D", "3D", "4D", "KS"])  # punta 6, banker 3: the punta's declaration is due
    assert tablet.client.get(f"/api/coups/{closed}/").json()["cards"] == ["2D", "3D", "4D", "KS"]
    body = "junk=1" if content_type.startswith("application") else "--BoUnDaRy\r\nContent-Disposition: form-data; name=\"junk\"\r\n\r\n1\r\n--BoUnDaRy--\r\n"
    for url in [f"/api/coups/{closed}/declaration/", f"/api/sessions/{game.session.pk}/regola/"]:
        key = f"form-{url}-{content_type[:5]}"
        refused_api(400, "invalid_input", lambda url=url, key=key: tablet.client.post(
            url, body, content_type=content_type, headers={"Idempotency-Key": key}
        ))  # fmt: skip
    assert tablet.client.get(f"/api/coups/{closed}/").json()["punta_draws"] is None


@pytest.mark.parametrize(
    ("method", "tail", "body"),
    [
        ("get", "game/", None),
        ("post", "coups/record/", {"cards": ["KH", "5S", "3C", "2D", "2S"]}),
        ("post", "void-cards/", {"card": "AS", "reason": "seen"}),
        ("post", "shoes/", {"number": "S-2"}),
        ("post", "banks/", {"patron": 1, "amount": 100_00}),
        ("post", "bars/", {"patron": 1, "reason": "faux tirage"}),
    ],
)
@pytest.mark.parametrize("session_id", [2**63, 10**25])
def test_a_session_id_beyond_bigint_is_a_404(method, tail, body, session_id, game, tablet, refused_api):
    # The prepared queries sent it to PostgreSQL: "bigint out of range", a 500.
    url = f"/api/sessions/{session_id}/{tail}"
    refused_api(404, "not_found", lambda: tablet.get(url) if method == "get" else tablet.post(url, body))
