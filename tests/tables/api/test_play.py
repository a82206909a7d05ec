"""Whole coups through the API, for every chemin de fer profile: step by step (the tablet
follows `coup.next` from each answer, never a second request) and one-shot; the postings,
the cagnotte, the bank and the balances to the cent (RULES.md §2-§4)."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from tables.api.coups_serializers import CoupAnswerSerializer, CoupDetailSerializer, GameStateSerializer
from tables.models import Bank, Coup, Posting, ShoeCard

from .conftest import BANKER_NATURAL, BANKER_WINS, PUNTA_NATURAL, PUNTA_WINS, TIE, error

pytestmark = pytest.mark.django_db


def play(tablet, session_id: int, *, cards, bets=(), banco=(), punta_draws=None, banker_draws=None) -> dict:
    """The tablet's way: open, bet, rien ne va plus, then whatever `coup.next` asks for."""
    answer = tablet.ok(tablet.post(f"/api/sessions/{session_id}/coups/"), 201)
    coup_id = answer["coup"]["id"]
    assert answer["coup"]["next"]["need"] == "bets" and answer["coup"]["state"] == "betting"
    for patron in banco:
        tablet.ok(tablet.post(f"/api/coups/{coup_id}/banco/", {"patron": patron.pk}), 201)
    for bet in bets:
        patron, amount, *kind = bet
        body = {"patron": patron.pk, "kind": kind[0] if kind else "individual"}
        if amount is not None:
            body["amount"] = amount
        answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/bets/", body), 201)
        assert answer["coup"]["open"] == answer["coup"]["bank_amount"] - answer["coup"]["covered"]
    answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/rien-ne-va-plus/"))
    pending = list(cards)
    while answer["coup"]["state"] not in ("settled", "pending"):
        need = answer["coup"]["next"]["need"]
        if need == "card":
            answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/cards/", {"card": pending.pop(0)}))
        elif need == "punta_declaration":
            assert answer["coup"]["rule"]["side"] == "punta"
            answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/declaration/", {"draws": punta_draws}))
        elif need == "banker_decision":
            assert answer["coup"]["rule"]["side"] == "banker"
            if banker_draws is False or not pending:
                answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/banker-decision/", {"draws": False}))
            else:  # his third card is his decision to draw
                answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/cards/", {"card": pending.pop(0)}))
        else:
            raise AssertionError(answer["coup"]["next"])
    assert pending == []
    return answer


def record(tablet, session_id: int, **body) -> dict:
    return tablet.ok(tablet.post(f"/api/sessions/{session_id}/coups/record/", body), 201)


def bets_body(*bets) -> list[dict]:
    return [{"patron": p.pk, "amount": a} for p, a in bets]


def detail(tablet, coup_id: int) -> dict:
    return tablet.ok(tablet.get(f"/api/coups/{coup_id}/"))


def by_patron(postings: list[dict]) -> dict:
    out: dict = {}
    for p in postings:
        out[p["patron"]] = out.get(p["patron"], 0) + p["amount"]
    return out


def balances(tablet, session_id: int) -> tuple[dict, int, int]:
    body = tablet.ok(tablet.get(f"/api/sessions/{session_id}/balances/"))
    return {b["patron"]["id"]: b["balance"] for b in body["balances"]}, body["house_cagnotte"], body["total"]


# cagnotte on S = 533.33 (RULES.md §4, table settings from the profile): 5% to the nearest
# 10 cents = 26.70 at venezia and at a classic casino; 0 in domestic and chemmy-fi games.
CAGNOTTE = {"venezia": 26_70, "classic": 26_70, "domestic": 0, "chemmy-fi": 0}
BETS_STAY_AFTER_TIE = {"venezia": False, "classic": True, "domestic": False, "chemmy-fi": True}


@pytest.mark.parametrize("profile", ["venezia", "classic", "domestic", "chemmy-fi"])
def test_every_profile_step_by_step_then_one_shot(make_game, tablet, profile):
    game = make_game(profile)
    sid = game.session.pk
    p2, p3, p4, p5 = (game.seat(n) for n in (2, 3, 4, 5))
    banker = game.banker

    # Coup 1, step by step: the banker wins; the highest bettor holds the cards.
    answer = play(tablet, sid, cards=BANKER_WINS, bets=[(p2, 333_33), (p3, 200_00)], punta_draws=True)
    coup = answer["coup"]
    assert (coup["state"], coup["winner"], coup["conforming"]) == ("settled", "banker", True)
    assert coup["punta"]["id"] == p2.pk and coup["covered"] == 533_33 and coup["next"] is None
    cag = CAGNOTTE[profile]
    assert coup["cagnotte"] == cag
    one = detail(tablet, coup["id"])
    assert by_patron(one["postings"]) == {p2.pk: -333_33, p3.pk: -200_00, banker.pk: 533_33 - cag, None: cag}
    assert one["as_played"]["punta"] == {"cards": ["KH", "3C", "2S"], "total": 5}
    assert one["banker_net"] == 533_33 - cag
    bank = answer["game"]["bank"]
    assert bank["coups_completed"] == 1
    if profile == "venezia":  # the whole stake stays in: B + S - cagnotte
        assert bank["amount"] == 1000_00 + 533_33 - 26_70
    if profile == "domestic":  # the next bank is 2S; B - S goes back to the banker
        assert bank["amount"] == 2 * 533_33
        assert Bank.objects.get(pk=bank["id"]).reserve_returned == 1000_00 - 533_33
    row = Bank.objects.get(pk=bank["id"])
    assert row.amount + row.reserve_returned == row.initial_amount + (533_33 - cag)

    # Coup 2, one shot: a tie.
    answer = record(tablet, sid, cards=TIE, punta_draws=False, bets=bets_body((p4, 100_00)))
    assert answer["coup"]["winner"] == "tie" and answer["coup"]["cagnotte"] == 0
    assert by_patron(detail(tablet, answer["coup"]["id"])["postings"]) == {p4.pk: 0, banker.pk: 0, None: 0}

    # Coup 3, one shot: the punta wins; after a classic / chemmy-fi tie p4's bet is still on.
    stays = BETS_STAY_AFTER_TIE[profile]
    answer = record(tablet, sid, cards=PUNTA_WINS, punta_draws=False, bets=bets_body((p5, 100_00)))
    coup3 = answer["coup"]
    covered = 200_00 if stays else 100_00
    assert (coup3["winner"], coup3["covered"]) == ("punta", covered)
    assert [b["carried"] for b in coup3["bets"]] == ([True, False] if stays else [False])
    assert answer["game"]["bank"] is None and answer["game"]["cannot_open_because"] == ["no_active_bank"]
    assert Bank.objects.get(pk=bank["id"]).status == "ended"

    got, house, total = balances(tablet, sid)
    expected = {p2.pk: -333_33, p3.pk: -200_00, p5.pk: 100_00, banker.pk: 533_33 - cag - covered, p4.pk: 0}
    if stays:
        expected[p4.pk] = 100_00
    assert got == expected and house == cag and total == 0
    # The game state's balances agree with the balances endpoint, to the cent.
    state = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))
    assert {b["patron"]: b["balance"] for b in state["balances"]} == got and state["house_cagnotte"] == cag
    listed = tablet.ok(tablet.get(f"/api/sessions/{sid}/coups/"))
    assert [c["winner"] for c in listed["results"]] == ["banker", "tie", "punta"]
    assert sum(p.amount for p in Posting.objects.filter(session=game.session)) == 0


def test_punto_banco_is_not_chemin_de_fer(make_game, tablet, refused_api):
    game = make_game("punto-banco", shoe=False, bank=None)
    sid = game.session.pk
    refused_api(400, "profile_not_supported", lambda: tablet.post(f"/api/sessions/{sid}/shoes/", {"number": "S-1"}))
    refused_api(
        400,
        "profile_not_supported",
        lambda: tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(1).pk, "amount": 1000_00}),
    )
    refused_api(400, "profile_not_supported", lambda: tablet.post(f"/api/sessions/{sid}/coups/"))
    refused_api(
        400,
        "profile_not_supported",
        lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", {"cards": PUNTA_WINS}),
    )


def test_naturals_step_by_step(game, tablet):
    sid = game.session.pk
    answer = play(tablet, sid, cards=PUNTA_NATURAL, bets=[(game.seat(2), 300_00)])
    assert (answer["coup"]["winner"], answer["coup"]["as_played"]["natural"]) == ("punta", True)
    tablet.ok(tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(3).pk, "amount": 500_00}), 201)
    # The punta asked for a card; the banker's natural wins at once, no card given (§2.6).
    answer = play(tablet, sid, cards=BANKER_NATURAL, bets=[(game.seat(2), 200_00)], punta_draws=True)
    assert (answer["coup"]["winner"], answer["coup"]["cards"], answer["coup"]["cagnotte"]) == (
        "banker",
        BANKER_NATURAL,
        10_00,
    )


def test_banco_and_avec_la_table(game, tablet):
    sid = game.session.pk
    answer = play(tablet, sid, cards=PUNTA_WINS, banco=[game.standing[0], game.seat(7), game.seat(3)],
                  punta_draws=False)  # fmt: skip
    # First in turn from the banker (seat 1) wins the call and covers the whole bank.
    assert answer["coup"]["punta"]["id"] == game.seat(3).pk and answer["coup"]["banco_solo"]
    assert answer["coup"]["covered"] == 1000_00
    assert [c["won"] for c in answer["coup"]["banco_calls"]] == [False, False, True]
    tablet.ok(tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(2).pk, "amount": 1000_00}), 201)
    answer = play(
        tablet,
        sid,
        cards=PUNTA_WINS,
        bets=[(game.seat(4), 400_00), (game.seat(6), None, "avec_la_table"), (game.standing[0], 100_00)],
        punta_draws=False,
    )
    coup = answer["coup"]
    assert coup["punta"]["id"] == game.seat(6).pk and coup["covered"] == 1000_00 and not coup["banco_solo"]
    assert [b["amount"] for b in coup["bets"]] == [400_00, 500_00, 100_00]


def test_regola_reconstruction_step_by_step(game, tablet):
    """RULES examples 2 and 3: the banker alla Regola stood on 3 against a 2."""
    sid = game.session.pk
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": game.banker.pk, "declared": True}))
    assert answer["mark"]["declared"] and answer["game"]["bank"]["regola"]
    cid = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]["id"]
    tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(2).pk, "amount": 400_00}), 201)
    tablet.ok(tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    for card in ["2H", "AS", "3C", "2D"]:
        answer = tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    assert answer["coup"]["next"]["need"] == "punta_declaration"
    tablet.ok(tablet.post(f"/api/coups/{cid}/declaration/", {"draws": True}))
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": "2S"}))
    assert answer["coup"]["rule"]["rule"] == "banker_regola" and answer["coup"]["rule"]["cell"] == "draw"
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/banker-decision/", {"draws": False}))
    coup = answer["coup"]
    assert coup["state"] == "pending" and coup["needs"] == {"cards": 1} and coup["conforming"] is False
    assert coup["next"]["need"] == "reconstruction" and coup["violations"][0]["side"] == "banker"
    assert not Posting.objects.filter(coup_id=cid).exists()
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/reconstruction/card/", {"card": "6D"}))
    coup = answer["coup"]
    assert (coup["state"], coup["winner"], coup["cagnotte"]) == ("settled", "banker", 20_00)
    one = detail(tablet, cid)
    assert one["as_played"]["winner"] == "punta"  # both versions kept
    assert one["settled"]["banker"] == {"cards": ["AS", "2D", "6D"], "total": 9}
    assert by_patron(one["postings"]) == {game.seat(2).pk: -400_00, game.banker.pk: 380_00, None: 20_00}
    assert ShoeCard.objects.get(coup_id=cid, code="6D").use == "reconstruction"
    assert tablet.ok(tablet.get(f"/api/sessions/{sid}/coups/", conforming="false"))["count"] == 1


def test_reconstruction_decision_one_shot_and_step(game, tablet):
    """RULES examples 5/6: the punta alla Regola stood on 4; the replay reaches a free banker cell."""
    sid = game.session.pk
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": game.seat(2).pk, "declared": True}))
    body = {"cards": ["2H", "KS", "2C", "5D", "9D"], "punta_draws": False, "bets": bets_body((game.seat(2), 100_00))}
    answer = record(tablet, sid, **body)
    assert answer["coup"]["state"] == "pending" and answer["coup"]["needs"] == {"decision": "banker"}
    cid = answer["coup"]["id"]
    answer = tablet.ok(
        tablet.post(f"/api/coups/{cid}/reconstruction/decision/", {"side": "banker", "draws": True})
    )
    assert answer["coup"]["needs"] == {"cards": 1}
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/reconstruction/card/", {"card": "3H"}))
    assert (answer["coup"]["state"], answer["coup"]["winner"]) == ("settled", "banker")
    # The same coup in one request: decision and next card given up front.
    body = {**body, "cards": ["2S", "KH", "2D", "5C", "9C"], "reconstruction": {"banker_draws": True},
            "next_cards": ["3D"]}  # fmt: skip
    answer = record(tablet, sid, **body)
    assert (answer["coup"]["state"], answer["coup"]["winner"]) == ("settled", "banker")
    assert answer["coup"]["settled"]["banker"]["total"] == 8


def test_void_card_bar_and_withdraw(game, tablet):
    sid = game.session.pk
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/void-cards/", {"card": "AS", "reason": "seen face up"}), 201)
    assert answer["card"]["code"] == "AS" and answer["card"]["position"] == 1
    assert answer["game"]["shoe"]["voided"] == 1 and answer["game"]["shoe"]["cards_out"] == 1
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/bars/", {"patron": game.seat(3).pk, "reason": "drew on 7"}), 201)
    assert answer["bar"]["patron"]["id"] == game.seat(3).pk
    # Its time in the casino's zone, as the game state's bars give it (not UTC's "Z").
    (listed,) = answer["game"]["bars"]
    assert answer["bar"]["at"] == listed["at"] and not answer["bar"]["at"].endswith("Z")
    assert [s["barred"] for s in answer["game"]["seats"] if s["patron"]["id"] == game.seat(3).pk] == [True]
    answer = record(tablet, sid, cards=BANKER_WINS, punta_draws=True,
                    bets=bets_body((game.seat(3), 400_00), (game.seat(7), 300_00)))  # fmt: skip
    assert answer["coup"]["punta"]["id"] == game.seat(7).pk  # the barred one bets, never holds the cards
    bank_id = answer["game"]["bank"]["id"]
    answer = tablet.ok(tablet.post(f"/api/banks/{bank_id}/withdraw/"))
    assert (answer["bank"]["status"], answer["bank"]["end_reason"]) == ("ended", "withdrawn")
    assert answer["bank"]["amount"] == 1000_00 + 700_00 - 35_00
    banks = tablet.ok(tablet.get(f"/api/sessions/{sid}/banks/"))
    assert [b["status"] for b in banks["results"]] == ["ended"]


def test_new_shoe_after_the_stop_card(game, tablet):
    sid = game.session.pk
    codes = [r + s for r in ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"] for s in "SHDC"]
    six = [c for c in codes for _ in range(6)]
    for code in six[:302]:
        tablet.ok(tablet.post(f"/api/sessions/{sid}/void-cards/", {"card": code, "reason": "emptying"}), 201)
    left = six[302:]
    answer = record(tablet, sid, cards=left[:6], punta_draws=True, banker_draws=True,
                    bets=bets_body((game.seat(2), 100_00)))  # fmt: skip
    assert answer["coup"]["state"] == "settled" and answer["game"]["shoe"]["stop_card_reached"]
    if answer["game"]["bank"] is None:
        tablet.ok(tablet.post(f"/api/sessions/{sid}/banks/", {"patron": game.seat(2).pk, "amount": 100_00}), 201)
    assert error(tablet.post(f"/api/sessions/{sid}/coups/")) == "stop_card_reached"
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/shoes/", {"number": "S-77"}), 201)
    assert (answer["shoe"]["seq"], answer["shoe"]["number"], answer["shoe"]["cards_out"]) == (2, "S-77", 0)
    assert answer["game"]["can_open_coup"]


def test_chemmy_fi_burn_through_the_api(make_game, tablet):
    game = make_game("chemmy-fi", shoe=False, bank=None)
    sid = game.session.pk
    answer = tablet.ok(
        tablet.post(f"/api/sessions/{sid}/shoes/", {"number": game.session.shoe_number,
                                                    "burn": ["AS", None, None, None, None, None, "KD"]}),
        201,
    )  # fmt: skip
    assert answer["shoe"]["dealable"] == 312 - 7


# --------------------------------------------------------------------------- the docs agree


def _conforms(serializer: serializers.Serializer, data, where: str = "") -> None:
    """Every key the view sends is documented, and every documented required key is sent."""
    if isinstance(serializer, serializers.ListSerializer):
        for i, item in enumerate(data):
            _conforms(serializer.child, item, f"{where}[{i}]")
        return
    if not isinstance(serializer, serializers.Serializer) or data is None:
        return
    fields = serializer.fields
    assert set(data) <= set(fields), (where, set(data) - set(fields))
    missing = {name for name, f in fields.items() if f.required and not f.read_only and name not in data}
    missing |= {name for name, f in fields.items() if f.required and name not in data}
    assert not missing, (where, missing)
    for name, value in data.items():
        _conforms(fields[name], value, f"{where}.{name}")


def test_answers_match_their_documented_serializers(game, tablet):
    sid = game.session.pk
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": game.seat(2).pk, "declared": True}))
    tablet.ok(tablet.post(f"/api/sessions/{sid}/bars/", {"patron": game.seat(8).pk, "reason": "x"}), 201)
    answer = record(tablet, sid, cards=BANKER_WINS, punta_draws=True, bets=bets_body((game.seat(2), 100_00)))
    _conforms(CoupAnswerSerializer(), answer)
    _conforms(CoupDetailSerializer(), detail(tablet, answer["coup"]["id"]))
    cid = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]["id"]
    tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(3).pk, "amount": 100_00}), 201)
    tablet.ok(tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    for card in ["2H", "AS", "3C", "2D"]:
        answer = tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    assert answer["coup"]["rule"] is not None and answer["coup"]["hands"] is not None
    _conforms(CoupAnswerSerializer(), answer)
    _conforms(GameStateSerializer(), tablet.ok(tablet.get(f"/api/sessions/{sid}/game/")))
    assert Coup.objects.filter(session=game.session).count() == 2


def test_a_coup_in_play_has_no_winner_yet_in_the_record_as_in_the_game_state(game, tablet):
    sid = game.session.pk
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)
    cid = answer["coup"]["id"]
    assert answer["coup"]["winner"] is None
    assert tablet.ok(tablet.get(f"/api/coups/{cid}/"))["winner"] is None
    assert [c["winner"] for c in tablet.ok(tablet.get(f"/api/sessions/{sid}/coups/"))["results"]] == [None]


def test_the_game_s_times_are_in_the_casino_s_time_zone_as_the_rest_of_the_api(game, tablet):
    """The game's bars, successions, offers and bids give their times as every other answer
    does (DRF: the casino's zone, Europe/Rome), not in the database's UTC."""
    from rest_framework import serializers

    from tables.models import FauxTirageBar

    sid = game.session.pk
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/bars/", {"patron": game.seat(3).pk, "reason": "drew on 7"}), 201)
    bar = FauxTirageBar.objects.get(session=game.session)
    at = answer["game"]["bars"][0]["at"]
    assert at == serializers.DateTimeField().to_representation(bar.at)
    assert not at.endswith(("+00:00", "Z"))  # Venice is never on UTC
    bank = answer["game"]["bank"]["id"]
    record(tablet, sid, cards=BANKER_WINS, punta_draws=True, bets=bets_body((game.seat(7), 300_00)))
    answer = tablet.ok(tablet.post(f"/api/banks/{bank}/withdraw/"))
    succession = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))["succession"]
    assert not succession["started_at"].endswith(("+00:00", "Z"))
