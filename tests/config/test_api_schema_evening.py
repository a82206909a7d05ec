"""The schema tells the truth about a whole evening (issue: "a new user can play a coup
through the API docs following the README"): every answer of an evening played through the
API only, as README's "Playing a coup through the API", "End of day" and "Bank succession
and the auction" describe it, successes and refusals alike, is held to the operation's
documented answer for its status (tests/config/schema_client.py).

tests/fuzz holds random input to the schema on a seeded floor; this holds the answers of the
states only a played evening reaches (a reconstruction, a settlement, a succession and its
asta, a closed session and day, the report and the books), their status codes, and the
headers a client acts on."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from floor.authentication import issue_token
from tests.factories import PASSWORD
from tests.tables.api.conftest import BANKER_WINS, PUNTA_NATURAL, TIE
from tests.tables.conftest import make_game  # noqa: F401  (the tables' fixture)

from .schema_client import SchemaChecked, SchemaClient, body_of, load_schema, replayed

pytestmark = pytest.mark.django_db


def ok(response, status: int = 200) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json() if response.content else {}


def refused(response, status: int, code: str) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response.json()["error"]["code"] == code, response.json()
    return response.json()["error"]


@pytest.fixture
def checked(commissario) -> SchemaChecked:
    return SchemaChecked(load_schema(commissario))


def test_an_evening_through_the_api_is_what_the_schema_says(
    checked, casino, site, commissario, capo_partita, changeur, auditor, direzione, make_user,
    django_capture_on_commit_callbacks, settings, tmp_path, monkeypatch,
):  # fmt: skip
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"audit_verify": "2/hour"})
    # The throttles' counts in a cache of this test's own: a Redis database shared with another
    # run (emptied by its tests) would lose them between two requests.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "evening"}
    }
    cache.clear()
    direzione2 = make_user("direzione2", "direzione")

    def answer(response, note: str, status: int, code: str = ""):
        """The answer is `status` (and the error `code`); its JSON body, if any."""
        content = body_of(response)
        body = (
            json.loads(content)
            if content and response["Content-Type"].startswith("application/json")
            else None
        )
        said = body["error"]["code"] if isinstance(body, dict) and isinstance(body.get("error"), dict) else ""
        assert (response.status_code, said) == (status, code), (note, response.status_code, content[:300])
        return body

    # -- logins, as a tablet does ------------------------------------------------------
    anonymous = SchemaClient(checked)
    refused(anonymous.post("/api/auth/token/", {"username": "commissario", "password": "wrong"}, idempotent=False),
            400, "invalid_credentials")  # fmt: skip
    token = ok(anonymous.post("/api/auth/token/", {"username": "commissario", "password": PASSWORD},
                              idempotent=False))["token"]  # fmt: skip
    com = SchemaClient(checked, token=token)
    refused(anonymous.get("/api/me/"), 401, "not_authenticated")
    schema_refused = anonymous.get("/api/schema/", {"format": "json"})
    assert schema_refused.status_code == 401
    assert json.loads(schema_refused.content)["error"]["code"] == "not_authenticated"
    # The schema's own format is YAML; its refusal is still the API's JSON error shape.
    yaml_refused = anonymous.get("/api/schema/")
    assert yaml_refused.status_code == 401
    assert yaml_refused["Content-Type"] == "application/json"
    assert json.loads(yaml_refused.content)["error"]["code"] == "not_authenticated"
    ok(com.get("/api/me/"))
    capo = SchemaClient(checked, token=issue_token(capo_partita)[0])
    aud = SchemaClient(checked, token=issue_token(auditor)[0])
    dire = SchemaClient(checked, token=issue_token(direzione)[0])
    dire2 = SchemaClient(checked, token=issue_token(direzione2)[0])
    ok(com.get("/api/casinos/"))

    # -- the day, the table, the seats -------------------------------------------------
    day = ok(com.post("/api/gaming-days/", {"casino": casino.pk}), 201)
    refused(com.post("/api/gaming-days/", {"casino": casino.pk}), 409, "gaming_day_already_open")
    ok(com.get("/api/gaming-days/"))
    table = ok(dire.post("/api/tables/", {"casino": casino.pk, "site": site.pk, "number": 1}), 201)
    ok(dire.patch(f"/api/tables/{table['id']}/", {"min_seats_to_start": 2}, idempotent=False))
    ok(com.get("/api/tables/"))
    answer(dire.post("/api/tables/", {"casino": casino.pk, "site": site.pk, "number": 9, "cagnotte_rounding": "sideways"}),
           "bad rounding", 400, "unknown_rounding")  # fmt: skip
    answer(dire.post("/api/tables/", {"casino": casino.pk, "site": site.pk, "number": 9, "min_seats_to_start": 12}),
           "bad min seats", 400, "min_seats_out_of_range")  # fmt: skip
    cyrillic = {"first_name": "Ivan", "last_name": "Petrov", "document_type": "passport",
                "document_number": "\u0423A1234567", "nationality": "RU"}  # fmt: skip
    answer(com.post("/api/patrons/", cyrillic), "a Cyrillic letter", 400, "invalid_document_number")
    ok(com.get(f"/api/tables/{table['id']}/"))
    session = ok(com.post("/api/sessions/", {
        "table": table["id"], "capo_partita": capo_partita.pk, "changeur": changeur.pk,
        "shoe_number": "S-101", "minimum": 100_00,
    }), 201)  # fmt: skip
    sid = session["id"]
    ok(com.get("/api/sessions/"))
    ok(com.get(f"/api/sessions/{sid}/"))
    patrons = []
    for n in range(1, 5):
        patron = ok(com.post("/api/patrons/", {
            "first_name": f"Giocatore{n}", "last_name": "Rossi", "document_type": "passport",
            "document_number": f"YA{n:07d}", "nationality": "IT", "birth_date": "1970-01-0" + str(n),
        }), 201)  # fmt: skip
        patrons.append(patron["id"])
        ok(com.post(f"/api/sessions/{sid}/seats/", {"patron": patron["id"], "seat_number": n}), 201)
    ok(com.get("/api/patrons/"))
    ok(com.get(f"/api/patrons/{patrons[0]}/"))
    ok(capo.get(f"/api/patrons/{patrons[0]}/"))
    ok(com.get(f"/api/sessions/{sid}/seats/"))
    p1, p2, p3, p4 = patrons

    # -- README "Playing a coup through the API" ---------------------------------------
    ok(capo.post(f"/api/sessions/{sid}/shoes/", {"number": "S-101"}), 201)
    refused(capo.post(f"/api/sessions/{sid}/banks/first/pass/", {"patron": p2}), 400, "not_first_banker_seat")
    refused(
        capo.post(f"/api/sessions/{sid}/banks/", {"patron": p2, "amount": 100000}),
        400,
        "not_first_banker_seat",
    )
    ok(capo.post(f"/api/sessions/{sid}/banks/", {"patron": p1, "amount": 100000}), 201)
    ok(capo.post(f"/api/sessions/{sid}/regola/", {"patron": p1, "declared": True}))
    record = {"bets": [{"patron": p2, "amount": 60000}, {"patron": p3, "amount": 40000}],
              "cards": ["2H", "AS", "3C", "2D", "2S"], "punta_draws": True, "next_cards": ["6D"]}  # fmt: skip
    first = capo.post(f"/api/sessions/{sid}/coups/record/", record, key="coup-1")
    ok(first, 201)
    again = capo.post(f"/api/sessions/{sid}/coups/record/", record, key="coup-1")
    assert replayed(again) and again.json() == first.json()
    refused(capo.post(f"/api/sessions/{sid}/coups/record/", {**record, "cards": ["KH"]}, key="coup-1"),
            422, "idempotency_key_reused")  # fmt: skip
    ok(capo.get(f"/api/sessions/{sid}/game/"))
    ok(capo.get(f"/api/sessions/{sid}/balances/"))
    # bodies the parsers refuse: not JSON, another media type, too large
    refused(capo.raw_post(f"/api/sessions/{sid}/coups/record/", '{"cards": ', "application/json"),
            400, "malformed_request")  # fmt: skip
    for _ in range(2):  # never stored under its key, so never replayed
        plain = capo.raw_post(f"/api/sessions/{sid}/coups/record/", "cards=KH", "text/plain", key="plain")
        refused(plain, 415, "unsupported_media_type")
        assert not replayed(plain)
    responses = checked.raw["paths"]["/api/sessions/{id}/coups/record/"]["post"]["responses"]
    assert "Idempotent-Replayed" not in responses["415"].get("headers", {})
    assert "Idempotent-Replayed" in responses["409"]["headers"]
    refused(capo.raw_post(f"/api/sessions/{sid}/coups/record/", b"[" + b"0," * 1_400_000 + b"0]", "application/json"),
            413, "request_too_large")  # fmt: skip

    # -- the same coup step by step, the Regola's reconstruction by its next card ----------
    coup = answer(capo.post(f"/api/sessions/{sid}/coups/"), "open", 201)
    cid = coup["coup"]["id"]
    answer(capo.post(f"/api/coups/{cid}/bets/", {"patron": p2, "amount": 30000}), "bet", 201)
    answer(capo.post(f"/api/coups/{cid}/bets/", {"patron": p3, "amount": 20000}), "bet", 201)
    answer(
        capo.post(f"/api/coups/{cid}/bets/withdraw/", {"patron": p3}),
        "withdraw bet",
        409,
        "bet_not_withdrawable",
    )
    answer(capo.post(f"/api/coups/{cid}/banco/", {"patron": p4}), "banco", 409, "bets_already_placed")
    answer(capo.post(f"/api/coups/{cid}/rien-ne-va-plus/"), "rnvp", 200)
    answer(
        capo.post(f"/api/coups/{cid}/bets/", {"patron": p4, "amount": 20000}),
        "bet late",
        409,
        "bet_after_rien_ne_va_plus",
    )
    for card in ["2H", "AS", "3C", "2C"]:  # the fourth tapped wrongly: 2C for 2D
        answer(capo.post(f"/api/coups/{cid}/cards/", {"card": card}), "card", 200)
    fix = f"/api/coups/{cid}/cards/correct/"
    answer(capo.post(fix, {"was": "3C", "card": "3D"}), "correct not last", 409, "card_not_last")
    answer(capo.post(fix, {"was": "2C", "card": "2C"}), "correct unchanged", 400, "card_unchanged")
    answer(capo.post(fix, {"was": "2C", "card": "2D"}), "correct", 200)
    answer(capo.post(f"/api/coups/{cid}/cards/", {"card": "ZZ"}), "bad card", 400, "bad_card")
    answer(capo.post(f"/api/coups/{cid}/declaration/", {"draws": True}), "decl", 200)
    answer(capo.post(fix, {"was": "2D", "card": "2S"}), "correct after decl", 409, "card_not_latest")
    answer(capo.post(f"/api/coups/{cid}/cards/", {"card": "2S"}), "card5", 200)
    answer(capo.post(f"/api/coups/{cid}/banker-decision/", {"draws": False}), "banker stands", 200)
    answer(capo.post(f"/api/coups/{cid}/reconstruction/card/", {"card": "6D"}), "recon card", 200)
    answer(
        capo.post(f"/api/coups/{cid}/reconstruction/decision/", {"side": "banker", "draws": True}),
        "recon dec",
        409,
        "reconstruction_not_pending",
    )
    answer(capo.get(f"/api/coups/{cid}/"), "coup detail", 200)
    answer(capo.get(f"/api/sessions/{sid}/coups/"), "coups", 200)
    answer(capo.get(f"/api/sessions/{sid}/banks/"), "banks", 200)
    c2 = answer(capo.post(f"/api/sessions/{sid}/coups/"), "open2", 201)
    c2id = c2["coup"]["id"]
    answer(capo.post(f"/api/coups/{c2id}/annul/", {"reason": "tablet lost"}), "annul", 200)
    answer(capo.post(f"/api/coups/{c2id}/annul/", {"reason": "again"}), "annul again", 409, "coup_annulled")
    answer(capo.post("/api/coups/999999/annul/", {"reason": "x"}), "annul unknown", 404, "not_found")
    answer(
        SchemaClient(checked, token=issue_token(changeur)[0]).post(f"/api/sessions/{sid}/coups/"),
        "changeur opens",
        403,
        "permission_denied",
    )
    answer(capo.post(f"/api/sessions/{sid}/void-cards/", {"card": "9C", "reason": "dropped"}), "void", 201)
    answer(capo.post(f"/api/sessions/{sid}/bars/", {"patron": p4, "reason": "faux tirage"}), "bar", 201)
    # -- the changeur's register of the cash he exchanges at the table (RULES.md §6; EU AMLD) --
    cash = SchemaClient(checked, token=issue_token(changeur)[0])
    exchanges = f"/api/sessions/{sid}/cash-exchanges/"
    line = answer(cash.post(exchanges, {"direction": "buy_in", "amount": 500_00}), "buy-in", 201)
    answer(cash.post(exchanges, {"direction": "cash_out", "amount": 200_00, "patron": p2}), "cash-out", 201)
    answer(cash.post(exchanges, {"direction": "buy_in", "amount": 2_000_00}), "unnamed at the threshold", 400,
           "patron_required")  # fmt: skip
    answer(cash.post(exchanges, {"direction": "buy_in", "amount": 0}), "exchange of nothing", 400, "invalid_input")
    answer(capo.post(exchanges, {"direction": "buy_in", "amount": 100_00}), "capo exchanges", 403,
           "permission_denied")  # fmt: skip
    answer(cash.post("/api/sessions/999999/cash-exchanges/", {"direction": "buy_in", "amount": 100_00}),
           "exchange at no session", 404, "not_found")  # fmt: skip
    answer(aud.get(exchanges), "register", 200)
    answer(cash.get(exchanges + "totals/"), "register totals", 200)
    answer(aud.get("/api/sessions/999999/cash-exchanges/totals/"), "totals of no session", 404, "not_found")
    void = f"/api/cash-exchanges/{line['exchange']['id']}/void/"
    answer(capo.post(void, {"reason": "x"}), "capo voids", 403, "permission_denied")
    answer(cash.post(void, {"reason": ""}), "void without reason", 400, "invalid_input")
    answer(cash.post(void, {"reason": "typed twice"}), "void", 200)
    answer(com.post(void, {"reason": "again"}), "void twice", 409, "exchange_already_voided")
    answer(com.post("/api/cash-exchanges/999999/void/", {"reason": "x"}), "void of no line", 404, "not_found")
    answer(com.post(f"/api/sessions/{sid}/cash-count/", {"float_issued": 0, "counted": 0}), "drawer in play", 409,
           "session_not_closed")  # fmt: skip
    answer(com.post(f"/api/sessions/{sid}/minimum/", {"minimum": 200_00, "reason": "late"}), "minimum", 200)
    # an optional key honoured when sent: the retry is the first answer, replayed
    raised = com.post(f"/api/sessions/{sid}/minimum/", {"minimum": 150_00, "reason": "retry"}, key="min-1")
    retried = com.post(f"/api/sessions/{sid}/minimum/", {"minimum": 150_00, "reason": "retry"}, key="min-1")
    assert retried.status_code == raised.status_code == 200 and replayed(retried) and not replayed(raised)
    answer(
        com.post(f"/api/sessions/{sid}/minimum/", {"minimum": 200_00, "reason": "late"}), "minimum again", 200
    )
    # a required key left out
    answer(
        capo.post(f"/api/sessions/{sid}/coups/", idempotent=False), "no key", 400, "idempotency_key_required"
    )
    malformed = capo.client.post(f"/api/sessions/{sid}/coups/", {}, format="json", HTTP_IDEMPOTENCY_KEY="a,b")
    checked.check(
        "post", f"/api/sessions/{sid}/coups/", {}, malformed, sent_headers={"Idempotency-Key": "a,b"}
    )
    answer(malformed, "bad key", 400, "bad_idempotency_key")
    answer(com.get(f"/api/sessions/{sid}/minimum-changes/"), "minimum changes", 200)
    answer(com.post(f"/api/sessions/{sid}/interrupt/", {"reason": "pause"}), "interrupt", 200)
    answer(capo.post(f"/api/sessions/{sid}/coups/"), "open interrupted", 409, "session_interrupted")
    answer(com.post(f"/api/sessions/{sid}/resume/", {}), "resume", 200)
    # A suspension the Direzione orders is the Direzione's to lift (RULES.md §6).
    suspended = answer(dire.post(f"/api/sessions/{sid}/interrupt/", {"reason": "disputa"}), "suspend", 200)
    assert [i["interrupted_as"] for i in suspended["interruptions"]] == ["commissario", "direzione"]
    answer(com.post(f"/api/sessions/{sid}/resume/", {}), "not his to lift", 403, "suspended_by_direzione")
    answer(dire.post(f"/api/sessions/{sid}/resume/", {}), "lifted", 200)
    game = answer(capo.get(f"/api/sessions/{sid}/game/"), "game", 200)
    bank_id = game["bank"]["id"] if game.get("bank") else None
    answer(
        capo.post(f"/api/banks/{bank_id}/raise/", {"amount": 500000}),
        "raise",
        409,
        "bank_raise_not_in_profile",
    )
    answer(capo.post(f"/api/banks/{bank_id}/withdraw/"), "withdraw", 200)
    succ = answer(capo.get(f"/api/sessions/{sid}/succession/"), "succession", 200)
    succ_id = succ["succession"]["id"]
    answer(
        capo.post(f"/api/successions/{succ_id}/pass/", {"patron": p3}),
        "pass out of turn",
        409,
        "not_your_turn",
    )
    answer(capo.post(f"/api/successions/{succ_id}/pass/", {"patron": p2}), "pass", 200)
    answer(capo.post(f"/api/successions/{succ_id}/pass/", {"patron": p3}), "pass", 200)
    answer(capo.get(f"/api/sessions/{sid}/succession/"), "succession after passes", 200)
    auction = answer(capo.post(f"/api/sessions/{sid}/auctions/"), "asta open", 201)
    aid = auction["succession"]["auction"]["id"]
    answer(
        capo.post(f"/api/auctions/{aid}/bids/", {"patron": p2, "amount": 50}),
        "bid low",
        400,
        "bid_below_minimum",
    )
    answer(capo.post(f"/api/auctions/{aid}/bids/", {"patron": p2, "amount": 300_00}), "bid", 201)
    answer(capo.post(f"/api/auctions/{aid}/bids/", {"patron": p3, "amount": 400_00}), "bid", 201)
    answer(capo.post(f"/api/auctions/{aid}/close/"), "asta close", 200)
    answer(capo.get(f"/api/sessions/{sid}/succession/"), "succession after asta", 200)
    answer(capo.post(f"/api/sessions/{sid}/shoes/", {"number": "S-102"}), "new shoe", 201)
    answer(capo.post(f"/api/sessions/{sid}/coups/record/", {"bets": [{"patron": p2, "amount": 100_00}],
         "cards": ["7H", "6S", "KH", "KD"], "punta_draws": False}), "record punta wins", 201)  # fmt: skip
    answer(
        capo.post(f"/api/sessions/{sid}/coups/record/", {"cards": ["KH"]}),
        "record bad",
        409,
        "no_active_bank",
    )
    # The banker (p3, from the asta) lost: the bank is offered in turn, from the table minimum.
    lost = answer(capo.get(f"/api/sessions/{sid}/succession/"), "succession after a loss", 200)["succession"]
    turn = next(offer for offer in lost["offers"] if offer["current"])
    answer(
        capo.post(f"/api/successions/{lost['id']}/accept/", {"patron": turn["patron"]["id"], "amount": 1}),
        "accept below the minimum",
        400,
        "bank_below_minimum",
    )
    answer(
        capo.post(
            f"/api/successions/{lost['id']}/accept/", {"patron": turn["patron"]["id"], "amount": 200_00}
        ),
        "accept",
        200,
    )
    answer(
        com.post(f"/api/sessions/{sid}/staff/", {"capo_partita": capo_partita.pk, "reason": "x"}),
        "staff same",
        400,
        "staff_unchanged",
    )
    answer(com.get(f"/api/sessions/{sid}/staff-changes/"), "staff changes", 200)
    seats = answer(com.get(f"/api/sessions/{sid}/seats/"), "seats", 200)
    seat4 = [x for x in seats["results"] if x["patron"]["id"] == p4]
    answer(com.post(f"/api/seats/{seat4[0]['id']}/release/"), "release", 200)
    # -- two more tables: a domestic one (banco, tie, a raise, a punta's natural), a chemmy-fi one
    # (a burn shown face up, a tie replayed with the bets carried) -------------------------
    other_tables = []
    for number, profile in ((2, "domestic"), (3, "chemmy-fi")):
        other = ok(dire.post("/api/tables/", {"casino": casino.pk, "site": site.pk, "number": number,
                                              "profile": profile, "min_seats_to_start": 2}), 201)  # fmt: skip
        other_tables.append(other["id"])
        its_capo = make_user(f"capo_{number}", "capo_partita")
        opened = ok(com.post("/api/sessions/", {
            "table": other["id"], "capo_partita": its_capo.pk, "changeur": make_user(f"changeur_{number}", "changeur").pk,
            "shoe_number": f"S-{number}01", "minimum": 100_00, "maximum": 5000_00,
        }), 201)  # fmt: skip
        osid = opened["id"]
        players = []
        for n, standing in ((1, False), (2, False), (3, True)):
            patron = ok(com.post("/api/patrons/", {
                "first_name": f"T{number}", "last_name": f"P{n}", "document_type": "id_card",
                "document_number": f"CA{number}{n:06d}", "nationality": "GB",
            }), 201)  # fmt: skip
            players.append(patron["id"])
            seat = (
                {"patron": patron["id"], "standing": True}
                if standing
                else {"patron": patron["id"], "seat_number": n}
            )
            ok(com.post(f"/api/sessions/{osid}/seats/", seat), 201)
        table_capo = SchemaClient(checked, token=issue_token(its_capo)[0])
        shoe = {"number": f"S-{number}01"}
        if profile == "chemmy-fi":
            shoe["burn"] = ["5H", None, None, None, None, None, None]
        answer(table_capo.post(f"/api/sessions/{osid}/shoes/", shoe), f"{profile} shoe", 201)
        bank = answer(table_capo.post(f"/api/sessions/{osid}/banks/", {"patron": players[0], "amount": 200_00}),
                      f"{profile} bank", 201)  # fmt: skip
        answer(table_capo.post(f"/api/sessions/{osid}/coups/record/", {"banco": [players[1]], "cards": TIE, "punta_draws": False}),
               f"{profile} banco tied", 201)  # fmt: skip
        if profile == "domestic":
            answer(table_capo.post(f"/api/sessions/{osid}/coups/record/", {
                "bets": [{"patron": players[1], "amount": 100_00}, {"patron": players[2], "amount": 50_00}],
                "cards": BANKER_WINS, "punta_draws": True}), "domestic banker wins", 201)  # fmt: skip
            answer(
                table_capo.post(f"/api/banks/{bank['bank']['id']}/raise/", {"amount": 1000_00}), "raise", 200
            )
            answer(table_capo.post(f"/api/sessions/{osid}/coups/record/", {
                "bets": [{"patron": players[1], "kind": "avec_la_table"}], "cards": PUNTA_NATURAL}),
                "domestic punta's natural", 201)  # fmt: skip
        else:
            replay = answer(table_capo.post(f"/api/sessions/{osid}/coups/"), "chemmy-fi replay", 201)
            assert [(c["patron"]["id"], c["carried"]) for c in replay["coup"]["banco_calls"]] == [
                (players[1], True)
            ]
            answer(table_capo.post(f"/api/coups/{replay['coup']['id']}/bets/withdraw/", {"patron": players[1]}),
                   "chemmy-fi bet taken back", 200)  # fmt: skip
            answer(table_capo.post(f"/api/coups/{replay['coup']['id']}/annul/", {"reason": "no bets left"}),
                   "chemmy-fi annul", 200)  # fmt: skip
        answer(table_capo.get(f"/api/sessions/{osid}/game/"), f"{profile} game", 200)
        answer(table_capo.get(f"/api/sessions/{osid}/balances/"), f"{profile} balances", 200)
        answer(table_capo.get(f"/api/sessions/{osid}/banks/"), f"{profile} banks", 200)
        answer(table_capo.get(f"/api/sessions/{osid}/coups/"), f"{profile} coups", 200)
        answer(table_capo.get(f"/api/sessions/{osid}/succession/"), f"{profile} succession", 200)
        answer(com.post(f"/api/sessions/{osid}/close/"), f"{profile} close", 200)

    # -- RULES.md §6: winnings left unclaimed, deposited by the Commissario, handed back later --
    deposits = f"/api/gaming-days/{day['id']}/unclaimed-deposits/"
    left = {"session": sid, "coup": cid, "patron": p2, "kind": "winnings", "amount": 300_00, "deposited_in": "busta 1"}
    answer(aud.post(deposits, left), "auditor deposits", 403, "permission_denied")
    answer(com.post(deposits, {**left, "amount": 0}), "deposit of nothing", 400, "invalid_input")
    answer(com.post(deposits, {**left, "patron": 999999}), "deposit of no patron", 400, "unknown_patron")
    answer(com.post("/api/gaming-days/999999/unclaimed-deposits/", left), "deposit on no day", 404, "not_found")
    dep = answer(com.post(deposits, left), "deposit", 201)
    answer(aud.get("/api/unclaimed-deposits/", {"gaming_day": day["id"], "returned": "false"}), "deposits", 200)
    answer(aud.get("/api/unclaimed-deposits/", {"session": "x"}), "deposits bad filter", 400, "invalid_input")
    answer(dire.post(f"/api/unclaimed-deposits/{dep['id']}/return/", {"patron": p2}), "handed back", 200)
    answer(com.post(f"/api/unclaimed-deposits/{dep['id']}/return/", {"returned_to": "x"}), "handed back twice", 409,
           "already_returned")  # fmt: skip
    answer(com.post("/api/unclaimed-deposits/999999/return/", {"returned_to": "x"}), "no such deposit", 404, "not_found")
    answer(com.post(deposits, {**left, "amount": 50_00}), "another deposit", 201)

    # the books of a day still open
    answer(aud.get(f"/api/gaming-days/{day['id']}/report/"), "report of an open day", 404, "report_not_found")
    answer(dire.get(f"/api/gaming-days/{day['id']}/cagnotte-register/"), "open day's register", 200)
    answer(dire.post(f"/api/gaming-days/{day['id']}/cagnotte-counts/",
                     {"table": table["id"], "counted": 0, "witness": auditor.pk}), "open day's count", 409, "day_not_closed")  # fmt: skip
    answer(
        dire.post(f"/api/gaming-days/{day['id']}/control-register/"),
        "open day's register",
        409,
        "day_not_closed",
    )
    answer(
        com.post(f"/api/gaming-days/{day['id']}/close/"),
        "day close with open session",
        409,
        "sessions_still_open",
    )
    answer(com.post(f"/api/sessions/{sid}/close/"), "session close", 200)
    answer(com.post(f"/api/sessions/{sid}/close/"), "session close again", 409, "session_closed")
    # -- the closed session's drawer, counted against the register, and a miscount corrected --
    drawer = f"/api/sessions/{sid}/cash-count/"
    answer(cash.post(drawer, {"float_issued": 0, "counted": 300_00}), "changeur counts", 403, "permission_denied")
    answer(com.post(drawer, {"float_issued": -1, "counted": 300_00}), "negative float", 400, "invalid_input")
    answer(aud.get(drawer), "drawer not counted", 200)
    counted = answer(com.post(drawer, {"float_issued": 1_000_00, "counted": 795_00}), "drawer count", 201)
    answer(dire.post(drawer, {"float_issued": 0, "counted": 1}), "drawer counted twice", 409, "already_counted")
    fix = f"/api/cash-counts/{counted['in_force']['id']}/correct/"
    answer(com.post(fix, {"reason": "x"}), "nothing to correct", 400, "nothing_to_correct")
    answer(dire.post(fix, {"counted": 800_00, "reason": "a fiver under the tray"}), "drawer correction", 201)
    answer(com.post(fix, {"counted": 1, "reason": "again"}), "correct the corrected", 409, "already_corrected")
    answer(com.post("/api/cash-counts/999999/correct/", {"counted": 1, "reason": "x"}), "no count", 404, "not_found")
    answer(cash.get(drawer), "drawer read by its changeur", 200)
    with django_capture_on_commit_callbacks(execute=True):
        answer(com.post(f"/api/gaming-days/{day['id']}/close/"), "day close", 200)
    answer(com.post(f"/api/gaming-days/{day['id']}/close/"), "day close again", 409, "gaming_day_closed")
    rep = answer(aud.get(f"/api/gaming-days/{day['id']}/report/"), "report", 200)
    answer(aud.get("/api/reports/"), "reports", 200)
    rid = rep["id"]
    answer(aud.get(f"/api/reports/{rid}/"), "report detail", 200)
    for fmt in ("pdf", "csv", "xlsx"):
        answer(aud.get(f"/api/reports/{rid}/files/{fmt}/"), f"file {fmt}", 200)
    answer(aud.get(f"/api/reports/{rid}/files/zip/"), "no such format", 404, "not_found")
    answer(aud.post(f"/api/reports/{rid}/verify/"), "verify", 200)
    answer(capo.post(f"/api/reports/{rid}/verify/"), "verify capo", 403, "permission_denied")
    answer(aud.get("/api/audit/events/"), "events", 200)
    answer(aud.get("/api/audit/streams/"), "streams", 200)
    answer(aud.post("/api/audit/verify/", {}, idempotent=False), "audit verify", 200)
    # Two verifications an hour (the budget set above): the third is throttled, with Retry-After.
    throttled = aud.post("/api/audit/verify/", {}, idempotent=False)
    answer(throttled, "audit verify throttled", 429, "throttled")
    assert int(throttled["Retry-After"]) > 0
    answer(aud.post(f"/api/reports/{rid}/verify/"), "report verify throttled", 429, "throttled")
    answer(dire.get(f"/api/gaming-days/{day['id']}/cagnotte-register/"), "cag register", 200)
    answer(dire.get(f"/api/gaming-days/{day['id']}/cagnotte-counts/"), "counts", 200)
    cnt = answer(
        dire.post(
            f"/api/gaming-days/{day['id']}/cagnotte-counts/",
            {"table": table["id"], "counted": 50_00, "witness": auditor.pk},
        ),
        "count",
        201,
    )
    answer(
        dire.post(
            f"/api/gaming-days/{day['id']}/cagnotte-counts/",
            {"table": table["id"], "counted": 50_00, "witness": capo_partita.pk},
        ),
        "count capo witness",
        400,
        "witness_not_management",
    )
    answer(
        dire.post(
            f"/api/cagnotte-counts/{cnt['id']}/correct/",
            {"counted": 60_00, "witness": auditor.pk, "note": "miscount"},
        ),
        "correct",
        201,
    )
    answer(dire.post(f"/api/gaming-days/{day['id']}/cagnotte-counts/", {"table": 999999, "counted": 0,
                                                                        "witness": auditor.pk}), "no table", 400, "unknown_table")  # fmt: skip
    for other in other_tables:
        answer(dire.post(f"/api/gaming-days/{day['id']}/cagnotte-counts/",
                         {"table": other, "counted": 0, "witness": auditor.pk}), "count", 201)  # fmt: skip
    answer(
        dire.get(f"/api/gaming-days/{day['id']}/control-register/"),
        "control register get",
        404,
        "register_not_found",
    )
    reg = answer(
        dire.post(f"/api/gaming-days/{day['id']}/control-register/"), "control register prepare", 200
    )
    answer(
        com.post("/api/gaming-days/", {"casino": casino.pk}), "next day unsigned", 409, "gaming_day_exists"
    )
    answer(dire.post(f"/api/control-registers/{reg['id']}/sign/"), "sign 1", 200)
    answer(
        dire.post(f"/api/control-registers/{reg['id']}/sign/"),
        "sign 1 again",
        409,
        "second_signer_must_differ",
    )
    answer(dire2.post(f"/api/control-registers/{reg['id']}/sign/"), "sign 2", 200)
    answer(com.post(deposits, left), "deposit on signed books", 409, "books_signed")
    answer(
        dire.post(f"/api/control-registers/{reg['id']}/correct/", {"reason": "x"}),
        "register correct",
        409,
        "register_unchanged",
    )
    answer(aud.get("/api/reports/"), "reports v2", 200)
    wrong = {"username": "capo_partita", "password": "not it"}
    for _ in range(5):
        answer(
            anonymous.post("/api/auth/token/", wrong, idempotent=False),
            "wrong password",
            400,
            "invalid_credentials",
        )
    locked = anonymous.post("/api/auth/token/", wrong, idempotent=False)
    answer(locked, "throttled login", 429, "too_many_failed_logins")
    assert locked["Retry-After"] == str(locked.json()["error"]["details"]["retry_after_seconds"])
    answer(com.post("/api/auth/logout/", idempotent=False), "logout", 204)
    answer(com.get("/api/me/"), "me after logout", 401, "authentication_failed")
    assert checked.problems == [], "\n".join(checked.problems)
    # The evening reached every operation it set out to: none was skipped on the way.
    reached = {(method, template) for method, template, _ in checked.seen}
    every = {(method, path) for path, operations in checked.raw["paths"].items() for method in operations}
    assert every - reached == set()


def test_the_check_can_fail(checked, commissario):
    """An answer the schema does not document is named: an undocumented status, a field of
    the wrong type, an undocumented header, another media type."""
    from django.http import HttpResponse, JsonResponse

    checked.check("get", "/api/me/", None, JsonResponse({"error": "x"}, status=418), sent_headers={})
    checked.check("get", "/api/me/", None, JsonResponse({"id": "one"}), sent_headers={})
    replay = JsonResponse({"error": {"code": "x", "message": "x", "details": {}}}, status=401)
    replay["Idempotent-Replayed"] = "true"
    checked.check("get", "/api/me/", None, replay, sent_headers={})
    checked.check("get", "/api/me/", None, HttpResponse(b"<html>", content_type="text/html"), sent_headers={})
    problems = "\n".join(checked.problems)
    assert "GET /api/me/ -> 418: status not documented" in problems
    assert "GET /api/me/ -> 200: the body does not conform" in problems
    assert "GET /api/me/ -> 401: answers the header Idempotent-Replayed" in problems
    assert "GET /api/me/ -> 200: answers text/html" in problems


def test_every_request_example_is_a_valid_request(checked):
    """The examples in /api/docs/ are bodies the schema accepts (a client copies them)."""
    examples = 0
    for path, operations in checked.raw["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            for name, example in content.get("examples", {}).items():
                examples += 1
                checked._check_request(f"{method.upper()} {path} example {name}", operation, example["value"])
    assert examples >= 4
    assert checked.problems == []


def test_the_one_shot_coups_examples_play(checked, make_game):  # noqa: F811
    """Each worked example of POST /api/sessions/{id}/coups/record/ is a coup the server plays
    as its summary says, at a venezia table whose seats 2-6 hold the example's patrons 2-6
    (the banker at seat 1: the demo floor's table 1), with the Regola marks the example's
    description asks for."""
    from tables import services

    examples = checked.raw["paths"]["/api/sessions/{id}/coups/record/"]["post"]["requestBody"]["content"][
        "application/json"
    ]["examples"]
    results = {}
    for example in examples.values():
        game = make_game("venezia", seated=6, standing=0, bank=1000_00)
        ids = {2 + n: game.seat(2 + n).pk for n in range(5)}
        if "regola" in example.get("description", "").lower():
            services.regola_mark(session=game.session, by=game.capo, patron=game.banker, declared=True)
        body = json.loads(json.dumps(example["value"]))
        for bet in body.get("bets", []):
            bet["patron"] = ids[bet["patron"]]
        if "banco" in body:
            body["banco"] = [ids[patron] for patron in body["banco"]]
        client = SchemaClient(checked, game.capo)
        response = client.post(f"/api/sessions/{game.session.pk}/coups/record/", body)
        coup = response.json().get("coup", {})
        results[example["summary"]] = (response.status_code, coup.get("winner"), coup.get("cagnotte"))
    # What each example's summary and description say of it.
    assert results == {
        "Two bets, the banker wins (venezia, 5% cagnotte)": (201, "banker", 26_70),
        "Banco solo, punta's natural": (201, "punta", 0),
        "Banco avec la table and an individual bet, the punta stands": (201, "punta", 0),
        "Banker alla Regola stood on 3 against a 2: reconstructed with the next shoe card": (
            201,
            "banker",
            50_00,
        ),
        # punta 4 stood against the rule: he gets 9D (3), the banker on 5 draws the next card 3H (8)
        "A reconstruction that needs a decision the real coup never took": (201, "banker", 5_00),
    }, results
    assert checked.problems == [], "\n".join(checked.problems)


def test_a_tables_named_settings_are_listed_where_a_client_writes_them(checked):
    """A client creating or editing a table reads which profiles and roundings exist from the
    schema: they were plain strings there (the server answers `unknown_profile` or
    `unknown_rounding` for any other word, which stays its answer)."""
    from floor.models import PROFILE_CHOICES, ROUNDING_CHOICES

    schemas = checked.raw["components"]["schemas"]

    def enum(prop: dict) -> list:
        ref = (prop.get("allOf") or [prop])[0]["$ref"].rsplit("/", 1)[1]
        return schemas[ref]["enum"]

    for name in ("TableInputRequest", "PatchedTablePatchInputRequest"):
        props = schemas[name]["properties"]
        assert enum(props["profile"]) == [value for value, _label in PROFILE_CHOICES], name
        assert enum(props["cagnotte_rounding"]) == [value for value, _label in ROUNDING_CHOICES], name
