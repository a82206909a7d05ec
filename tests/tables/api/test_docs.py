"""A new user can play a coup from the API docs: every endpoint is there, with its request
and answer, the one-shot with worked examples, and the schema validates without a warning."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from .conftest import Tablet

pytestmark = pytest.mark.django_db

PATHS = {
    "/api/sessions/{id}/game/": ["get"],
    "/api/sessions/{id}/balances/": ["get"],
    "/api/sessions/{id}/shoes/": ["post"],
    "/api/sessions/{id}/void-cards/": ["post"],
    "/api/sessions/{id}/banks/": ["get", "post"],
    "/api/banks/{id}/withdraw/": ["post"],
    "/api/sessions/{id}/coups/": ["get", "post"],
    "/api/sessions/{id}/coups/record/": ["post"],
    "/api/coups/{id}/": ["get"],
    "/api/coups/{id}/banco/": ["post"],
    "/api/coups/{id}/bets/": ["post"],
    "/api/coups/{id}/rien-ne-va-plus/": ["post"],
    "/api/coups/{id}/cards/": ["post"],
    "/api/coups/{id}/cards/correct/": ["post"],
    "/api/coups/{id}/declaration/": ["post"],
    "/api/coups/{id}/banker-decision/": ["post"],
    "/api/coups/{id}/reconstruction/card/": ["post"],
    "/api/coups/{id}/reconstruction/decision/": ["post"],
    "/api/sessions/{id}/regola/": ["post"],
    "/api/sessions/{id}/bars/": ["post"],
}


def test_schema_documents_every_coup_endpoint(capo_partita):
    tablet = Tablet(capo_partita)
    response = tablet.client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    for raw, methods in PATHS.items():
        path = raw
        assert path in schema["paths"], path
        for method in methods:
            op = schema["paths"][path][method]
            assert {"401", "403"} <= set(op["responses"]), (path, method)
            if method == "post":
                headers = [p for p in op.get("parameters", []) if p["in"] == "header"]
                assert [(h["name"], h["required"]) for h in headers] == [("Idempotency-Key", True)], path
                assert {"400", "404", "409", "422"} <= set(op["responses"]), path
    record = schema["paths"]["/api/sessions/{id}/coups/record/"]["post"]
    examples = record["requestBody"]["content"]["application/json"]["examples"]
    assert len(examples) >= 4
    assert tablet.client.get("/api/docs/").status_code == 200


def test_the_coup_api_adds_no_schema_warning():
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    ours = [w for w in [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
            if "tables/api/coups" in w or "Game" in w or "Coup" in w]  # fmt: skip
    GENERATOR_STATS.reset()
    assert ours == []


def test_spectacular_validates_without_warnings(tmp_path):
    """The project-wide gate (`manage.py spectacular --validate --fail-on-warn`)."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))


def test_a_banks_answer_is_its_serializers_data(make_game):
    """The write answers build the bank directly (coups_serializers.bank_data): the same keys,
    order and values as CoupBankSerializer, active and ended, in any current time zone."""
    from django.utils import timezone

    from tables.api.coups_serializers import CoupBankSerializer, bank_data

    game = make_game("venezia")
    bank = game.bank
    for zone in ("Europe/Rome", "UTC", "America/New_York"):
        with timezone.override(zone):
            expected = dict(CoupBankSerializer(bank).data)
            assert list(bank_data(bank).items()) == list(expected.items())
    bank.status, bank.end_reason, bank.ended_at = "ended", "withdrawn", timezone.now()
    for zone in ("Europe/Rome", "UTC"):
        with timezone.override(zone):
            assert list(bank_data(bank).items()) == list(dict(CoupBankSerializer(bank).data).items())


# --------------------------------------------------------------------------- the README's coup
# README "Playing a coup through the API": logged in as capo1 on the demo floor (`make run`,
# seed_demo on a new database: patron 1 at seat 1 of table 1, session 1, patrons 2-7 beside
# him), "Try it out" fills each body with the operation's first example. Those examples must
# play the README's coup there, as they stand.


def _examples(schema: dict, path: str) -> list:
    body = schema["paths"][path]["post"].get("requestBody", {})
    examples = body.get("content", {}).get("application/json", {}).get("examples", {})
    return [example["value"] for example in examples.values()]


@pytest.fixture
def demo_floor(settings):
    """The demo as `make run` serves it on a new database (the ids the README names)."""
    import io

    from django.contrib.auth import get_user_model

    settings.DEBUG = True  # seed_demo refuses without it, as `make run` sets it
    call_command("seed_demo", stdout=io.StringIO())
    tablet = Tablet(get_user_model().objects.get(username="capo1"))
    schema = tablet.client.get("/api/schema/", {"format": "json"}).json()
    return tablet, schema


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_docs_examples_play_the_readme_coup_on_the_demo_floor(demo_floor):
    tablet, schema = demo_floor
    first = {path: (_examples(schema, path) or [None])[0] for path in schema["paths"] if "post" in schema["paths"][path]}
    # Steps 1-3: the shoe, the first bank to seat 1, the banker alla Regola.
    assert first["/api/sessions/{id}/shoes/"] == {"number": "S-101"}
    tablet.ok(tablet.post("/api/sessions/1/shoes/", first["/api/sessions/{id}/shoes/"]), 201)
    assert first["/api/sessions/{id}/banks/"] == {"patron": 1, "amount": 100000}
    tablet.ok(tablet.post("/api/sessions/1/banks/", first["/api/sessions/{id}/banks/"]), 201)
    assert first["/api/sessions/{id}/regola/"] == {"patron": 1, "declared": True}
    tablet.ok(tablet.post("/api/sessions/1/regola/", first["/api/sessions/{id}/regola/"]))
    # Step 4 in one request: the record's first example is the README's body.
    coup = tablet.ok(tablet.post("/api/sessions/1/coups/record/", first["/api/sessions/{id}/coups/record/"]), 201)["coup"]
    assert (coup["state"], coup["winner"], coup["cagnotte"], coup["next_cards"]) == ("settled", "banker", 5000, ["6D"])

    # Step 4 step by step, the same coup, with the steps' examples where the README gives them.
    answer = tablet.ok(tablet.post("/api/sessions/1/coups/"), 201)
    coup_id = answer["coup"]["id"]
    assert answer["coup"]["next"]["need"] == "bets"
    bets = _examples(schema, "/api/coups/{id}/bets/")
    assert bets[0] == {"patron": 2, "amount": 60000}
    tablet.ok(tablet.post(f"/api/coups/{coup_id}/bets/", bets[0]), 201)
    tablet.ok(tablet.post(f"/api/coups/{coup_id}/bets/", {"patron": 3, "amount": 40000}), 201)
    answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/rien-ne-va-plus/"))
    assert answer["coup"]["next"] == {"need": "card", "side": "punta", "natural": False}
    cards = _examples(schema, "/api/coups/{id}/cards/")
    assert cards[0] == {"card": "2H"}
    for card in (cards[0], {"card": "AS"}, {"card": "3C"}, {"card": "2D"}):
        answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/cards/", card))
    assert answer["coup"]["next"]["need"] == "punta_declaration"
    carte = _examples(schema, "/api/coups/{id}/declaration/")[0]
    answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/declaration/", carte))
    assert answer["coup"]["next"] == {"need": "card", "side": "punta", "natural": False}
    answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/cards/", cards[1]))  # 2S, four cards seen
    assert answer["coup"]["next"]["need"] == "banker_decision"
    stands = _examples(schema, "/api/coups/{id}/banker-decision/")[0]
    answer = tablet.ok(tablet.post(f"/api/coups/{coup_id}/banker-decision/", stands))
    assert answer["coup"]["next"] == {"need": "reconstruction", "side": None, "natural": False, "needs": {"cards": 1}}
    six = _examples(schema, "/api/coups/{id}/reconstruction/card/")[0]
    coup = tablet.ok(tablet.post(f"/api/coups/{coup_id}/reconstruction/card/", six))["coup"]
    assert (coup["state"], coup["winner"], coup["cagnotte"], coup["next"]) == ("settled", "banker", 5000, None)

    # Step 5: the balances sum to zero with the house's cagnotte.
    balances = tablet.get("/api/sessions/1/balances/").json()
    assert balances["house_cagnotte"] == 10000
    assert sum(b["balance"] for b in balances["balances"]) + balances["house_cagnotte"] == 0 == balances["total"]


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_every_request_example_of_the_coup_api_is_taken_on_the_demo_floor(demo_floor):
    """Each example of the one-shot plays on the demo floor (each on the floor as the README's
    steps 1-2 leave it, with the marks its description asks for), with the outcome its
    description states; every other example of a coup step is a body its operation takes."""
    from django.db import transaction

    from tables.api import coups_serializers as s

    tablet, schema = demo_floor
    tablet.ok(tablet.post("/api/sessions/1/shoes/", {"number": "S-101"}), 201)
    tablet.ok(tablet.post("/api/sessions/1/banks/", {"patron": 1, "amount": 100000}), 201)
    records = _examples(schema, "/api/sessions/{id}/coups/record/")
    marks = [[1], [], [], [], []]  # whom each example's description marks alla Regola
    outcomes = [("banker", 50_00), ("banker", 26_70), ("punta", 0), ("punta", 0), ("banker", 5_00)]
    assert len(records) == len(marks)
    for body, marked, (winner, cagnotte) in zip(records, marks, outcomes, strict=True):
        with transaction.atomic():
            for patron in marked:
                tablet.ok(tablet.post("/api/sessions/1/regola/", {"patron": patron, "declared": True}))
            coup = tablet.ok(tablet.post("/api/sessions/1/coups/record/", body), 201)["coup"]
            assert (coup["state"], coup["winner"], coup["cagnotte"]) == ("settled", winner, cagnotte), body
            transaction.set_rollback(True)

    inputs = {
        "/api/sessions/{id}/shoes/": s.ShoeLoadInput,
        "/api/sessions/{id}/banks/": s.BankOpenInput,
        "/api/sessions/{id}/regola/": s.RegolaMarkInput,
        "/api/coups/{id}/bets/": s.BetPlaceInput,
        "/api/coups/{id}/cards/": s.CardDealInput,
        "/api/coups/{id}/declaration/": s.DrawsInput,
        "/api/coups/{id}/banker-decision/": s.DrawsInput,
        "/api/coups/{id}/reconstruction/card/": s.CardDealInput,
        "/api/coups/{id}/reconstruction/decision/": s.ReconstructionDecisionInput,
    }
    for path, serializer in inputs.items():
        examples = _examples(schema, path)
        assert examples, f"{path}: Try it out would start from a made-up body"
        for body in examples:
            data = serializer(data=body)
            assert data.is_valid(), (path, body, data.errors)


def test_no_operation_is_described_by_the_project_s_plumbing(capo_partita):
    """An operation without a description of its own was described by a base class's
    docstring, written for developers ("Put it first among the bases")."""
    from config.api import TakesNoBody
    from floor.apis import _ListApi
    from floor.idempotency import IdempotentAPIView, IdempotentMixin

    schema = Tablet(capo_partita).client.get("/api/schema/", {"format": "json"}).json()
    plumbing = [" ".join(cls.__doc__.split()[:8]) for cls in (IdempotentMixin, IdempotentAPIView, TakesNoBody, _ListApi)]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            said = " ".join(operation.get("description", "").split())
            assert not [doc for doc in plumbing if doc in said], (method, path, said[:120])


def test_the_docs_say_how_to_log_in_send_the_key_and_read_the_balances(capo_partita):
    schema = Tablet(capo_partita).client.get("/api/schema/", {"format": "json"}).json()
    schemes = schema["components"]["securitySchemes"]
    assert "/accounts/login/" in schemes["cookieAuth"]["description"]
    assert "Nothing to enter" in schemes["cookieAuth"]["description"]
    token = schemes["tokenAuth"]["description"]
    assert "/api/auth/token/" in token and "`Token 9944b09199c6...`" in token
    intro = schema["info"]["description"]
    assert "/accounts/login/" in intro and "Idempotency-Key" in intro and "idempotency_key_reused" in intro
    balances = schema["paths"]["/api/sessions/{id}/balances/"]["get"]
    assert balances["summary"] and "house_cagnotte" in balances["description"]
    assert "sum to zero" in balances["description"]


def test_every_operation_says_what_it_does(capo_partita):
    """No operation is left without a description: twelve were described by the plumbing's
    docstrings, then by nothing (GET sessions, seats, tables, gaming days...). Each says whom
    it serves, and each paginated list says so and names its filters."""
    schema = Tablet(capo_partita).client.get("/api/schema/", {"format": "json"}).json()
    silent = [
        (method, path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if not operation.get("description", "").strip()
    ]
    assert silent == []
    described = {path: schema["paths"][path]["get"]["description"] for path in (
        "/api/casinos/", "/api/tables/", "/api/gaming-days/", "/api/sessions/", "/api/sessions/{id}/seats/",
        "/api/sessions/{id}/banks/", "/api/sessions/{id}/minimum-changes/", "/api/sessions/{id}/staff-changes/",
    )}  # fmt: skip
    for path, said in described.items():
        assert "Paginated" in said and "`page_size`" in said, path
        filters = [p["name"] for p in schema["paths"][path]["get"].get("parameters", [])
                   if p["in"] == "query" and p["name"] not in ("page", "page_size")]  # fmt: skip
        assert [name for name in filters if f"`{name}`" not in said] == [], path
    # Who may call it: the table staff read only their own sessions.
    assert "only those he works or worked at" in described["/api/sessions/"]
    assert "Direzione Giochi alone" in described["/api/tables/"]
    register = schema["paths"]["/api/gaming-days/{id}/control-register/"]
    assert "`register_not_found`" in register["get"]["description"]
    assert "Direzione Giochi alone" in register["post"]["description"]
    assert "`register_signed`" in register["post"]["description"]
    returned = schema["paths"]["/api/unclaimed-deposits/{id}/return/"]["post"]["description"]
    assert "`already_returned`" in returned and "`claimant_required`" in returned


def test_the_token_login_starts_from_a_body_without_otp(capo_partita):
    """Try it out starts from the first example: Swagger's made-up `"otp": "string"` was a
    wrong code, a failed login for the throttle where MFA is on. The README's body comes
    first; the code is an example of its own, for the supervising roles with MFA enrolled."""
    schema = Tablet(capo_partita).client.get("/api/schema/", {"format": "json"}).json()
    body = schema["paths"]["/api/auth/token/"]["post"]["requestBody"]["content"]["application/json"]
    examples = list(body["examples"].values())
    from floor.apis import TokenLoginApi

    assert all(TokenLoginApi.TokenLoginInput(data=example["value"]).is_valid() for example in examples)
    assert examples[0]["value"] == {"username": "commissario", "password": "chemin-demo-commissario"}
    with_code = [example for example in examples if "otp" in example["value"]]
    assert len(with_code) == 1 and examples[-1] is with_code[0]
    assert with_code[0]["value"]["otp"].isascii() and len(with_code[0]["value"]["otp"]) == 6
    assert with_code[0]["value"]["otp"].isdigit()
    assert "MFA" in with_code[0]["description"] and "enrolled" in with_code[0]["description"]
    assert "failed login" in with_code[0]["description"]


def test_every_paginated_list_says_so_and_names_its_filters(capo_partita):
    """The audit events and streams, the patrons, the reports and the unclaimed deposits were
    lists whose descriptions named no filter (or not by the name the query takes): a reader
    of the docs saw the parameters without a word of what they select."""
    schema = Tablet(capo_partita).client.get("/api/schema/", {"format": "json"}).json()
    unsaid = {}
    for path, operations in schema["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        query = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
        if "page" not in query:
            continue
        said = operation.get("description", "")
        missing = [name for name in query if name not in ("page", "page_size") and f"`{name}`" not in said]
        if "Paginated" not in said or "`page_size`" not in said or missing:
            unsaid[path] = missing
    assert unsaid == {}, unsaid
    # The events' seq range and order among them: their names are said as the others'.
    events = schema["paths"]["/api/audit/events/"]["get"]
    assert {"seq_min", "seq_max", "order"} <= {p["name"] for p in events["parameters"] if p["in"] == "query"}
