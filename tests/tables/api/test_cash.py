"""The changeur's register of cash exchanged at his table (tables.services.cash, tables/api/
cash.py): his exchanges through the API, the totals, the anti-money-laundering threshold
(single and linked), the voids, and every refusal, which writes nothing."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from config.errors import ApplicationError
from floor import services as floor_services
from floor.roles import Role
from tables import services
from tables.models import CashExchange
from tables.services import _common
from tests.factories import PatronFactory

from .conftest import Tablet, dump

pytestmark = pytest.mark.django_db

THRESHOLD = 2_000_00


@pytest.fixture(autouse=True)
def _threshold(settings):
    settings.AML_IDENTIFY_CENTS = THRESHOLD


@pytest.fixture
def game(make_game):
    return make_game("venezia")


def url(game) -> str:
    return f"/api/sessions/{game.session.pk}/cash-exchanges/"


def events(game, action: str) -> list[dict]:
    return [
        e.payload
        for e in AuditEvent.objects.filter(stream__name=game.session.audit_stream, action=action).order_by("seq")
    ]


def api_refused(tablet: Tablet, path: str, body: dict, status: int, code: str) -> dict:
    before = dump()
    r = tablet.post(path, body)
    assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.json()
    assert dump() == {**before, "IdempotencyKey": dump()["IdempotencyKey"]}  # (a 4xx answer keeps its key)
    assert CashExchange.objects.count() == len(before["CashExchange"])
    return r.json()["error"]


# --------------------------------------------------------------------------- the happy path


def test_the_changeur_records_buy_ins_and_cash_outs_with_their_events_and_totals(game, changeur, auditor):
    tablet = Tablet(changeur)
    p = game.seat(3)
    r = tablet.post(url(game), {"direction": "buy_in", "amount": 500_00})
    assert r.status_code == 201, r.json()
    first = r.json()["exchange"]
    assert (first["number"], first["direction"], first["amount"], first["patron"]) == (1, "buy_in", 500_00, None)
    assert (first["linked_total"], first["identification_required"], first["voided"]) == (500_00, False, False)
    assert first["recorded_by"] == changeur.pk
    r = tablet.post(url(game), {"direction": "buy_in", "amount": 1_000_00, "patron": p.pk})
    assert r.status_code == 201 and r.json()["exchange"]["patron"] == {"id": p.pk, "name": p.full_name}
    r = tablet.post(url(game), {"direction": "cash_out", "amount": 300_00, "patron": p.pk})
    assert r.status_code == 201
    assert r.json()["totals"] == {
        "session": game.session.pk, "buy_ins": 1_500_00, "cash_outs": 300_00, "net": 1_200_00, "count": 3,
        "voided": 0, "unnamed": 500_00, "threshold": THRESHOLD,
    }  # fmt: skip
    listed = Tablet(auditor).get(url(game)).json()
    assert [(x["number"], x["direction"], x["amount"]) for x in listed["results"]] == [
        (1, "buy_in", 500_00), (2, "buy_in", 1_000_00), (3, "cash_out", 300_00)
    ]  # fmt: skip
    assert Tablet(auditor).get(url(game) + "totals/").json() == r.json()["totals"]
    said = events(game, "cash.exchanged")
    assert [(e["number"], e["direction"], e["amount"], e["patron"]) for e in said] == [
        (1, "buy_in", 500_00, None), (2, "buy_in", 1_000_00, p.pk), (3, "cash_out", 300_00, p.pk)
    ]  # fmt: skip
    assert said[2]["linked_total"] == 1_300_00 and said[2]["threshold"] == THRESHOLD


def test_an_exchange_while_play_is_interrupted_is_recorded(game, changeur):
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="pause")
    r = Tablet(changeur).post(url(game), {"direction": "cash_out", "amount": 200_00, "patron": game.seat(2).pk})
    assert r.status_code == 201, r.json()


def test_a_patron_who_left_the_table_cashes_out(game, changeur):
    patron = game.seat(5)
    seat = game.session.seats.get(patron=patron, left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=game.commissario)
    r = Tablet(changeur).post(url(game), {"direction": "cash_out", "amount": 200_00, "patron": patron.pk})
    assert r.status_code == 201, r.json()


def test_a_replay_with_the_same_key_writes_once(game, changeur):
    tablet = Tablet(changeur)
    body = {"direction": "buy_in", "amount": 400_00}
    first = tablet.post(url(game), body, key="cash-1")
    again = tablet.post(url(game), body, key="cash-1")
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert CashExchange.objects.count() == 1 and len(events(game, "cash.exchanged")) == 1
    r = tablet.post(url(game), body, key=False)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "idempotency_key_required")


# --------------------------------------------------------------------------- anti-money laundering


def test_an_exchange_at_the_threshold_names_its_patron(game, changeur):
    tablet = Tablet(changeur)
    error = api_refused(tablet, url(game), {"direction": "buy_in", "amount": THRESHOLD}, 400, "patron_required")
    assert error["details"] == {"amount": THRESHOLD, "linked_total": THRESHOLD, "threshold": THRESHOLD, "linked": False}
    r = tablet.post(url(game), {"direction": "buy_in", "amount": THRESHOLD, "patron": game.seat(2).pk})
    assert r.status_code == 201 and r.json()["exchange"]["identification_required"] is True
    # just below it, no name is needed
    r = tablet.post(url(game), {"direction": "buy_in", "amount": THRESHOLD - 1})
    assert r.status_code == 201 and r.json()["exchange"]["identification_required"] is False


def test_the_unnamed_exchanges_are_linked_and_stop_at_the_threshold(game, changeur):
    tablet = Tablet(changeur)
    first = tablet.post(url(game), {"direction": "buy_in", "amount": 1_500_00}).json()["exchange"]
    tablet.post(url(game), {"direction": "cash_out", "amount": 400_00})
    error = api_refused(tablet, url(game), {"direction": "buy_in", "amount": 100_00}, 400, "patron_required")
    assert error["details"] == {"amount": 100_00, "linked_total": 2_000_00, "threshold": THRESHOLD, "linked": True}
    # named, it is his own first exchange
    r = tablet.post(url(game), {"direction": "buy_in", "amount": 100_00, "patron": game.seat(4).pk})
    assert r.status_code == 201 and r.json()["exchange"]["linked_total"] == 100_00
    # a voided line leaves the linked sum
    tablet.post(f"/api/cash-exchanges/{first['id']}/void/", {"reason": "typed 1500 for 150"})
    assert tablet.post(url(game), {"direction": "buy_in", "amount": 100_00}).status_code == 201


def test_a_patrons_exchanges_are_linked_and_the_one_reaching_the_threshold_says_so(game, changeur):
    tablet = Tablet(changeur)
    p, other = game.seat(3), game.seat(4)
    sums = []
    for direction, amount, who in (("buy_in", 1_200_00, p), ("buy_in", 900_00, other), ("cash_out", 700_00, p),
                                   ("buy_in", 100_00, p)):  # fmt: skip
        r = tablet.post(url(game), {"direction": direction, "amount": amount, "patron": who.pk})
        assert r.status_code == 201, r.json()
        sums.append((r.json()["exchange"]["linked_total"], r.json()["exchange"]["identification_required"]))
    assert sums == [(1_200_00, False), (900_00, False), (1_900_00, False), (2_000_00, True)]
    assert events(game, "cash.exchanged")[-1]["identification_required"] is True


# --------------------------------------------------------------------------- who records


@pytest.mark.parametrize("role", [Role.CAPO_PARTITA, Role.COMMISSARIO, Role.AUDITOR, Role.DIREZIONE, None])
def test_only_the_sessions_changeur_records(game, make_user, capo_partita, commissario, role):
    user = {Role.CAPO_PARTITA: capo_partita, Role.COMMISSARIO: commissario}.get(role) or make_user(
        f"user_{role}", *([role] if role else [])
    )
    api_refused(Tablet(user), url(game), {"direction": "buy_in", "amount": 100_00}, 403, "permission_denied")


def test_a_changeur_of_another_table_records_nothing_there_nor_reads_it(game, make_game, changeur):
    other = make_game("venezia")  # its own changeur
    assert other.session.changeur_id != changeur.pk
    theirs = Tablet(other.session.changeur)
    api_refused(theirs, url(game), {"direction": "buy_in", "amount": 100_00}, 403, "permission_denied")
    assert theirs.get(url(game)).status_code == 403
    assert theirs.get(url(game) + "totals/").status_code == 403
    assert theirs.post(url(other), {"direction": "buy_in", "amount": 100_00}).status_code == 201


def test_a_relieved_changeur_records_no_more_but_reads_his_session(game, changeur, make_user):
    tablet = Tablet(changeur)
    tablet.post(url(game), {"direction": "buy_in", "amount": 100_00})
    relief = make_user("relief", Role.CHANGEUR)
    floor_services.table_session_staff_change(session=game.session, by=game.commissario, changeur=relief, reason="x")
    api_refused(tablet, url(game), {"direction": "buy_in", "amount": 100_00}, 403, "permission_denied")
    assert tablet.get(url(game)).json()["count"] == 1
    assert Tablet(relief).post(url(game), {"direction": "buy_in", "amount": 100_00}).status_code == 201


def test_the_service_refuses_anyone_but_the_changeur(game, capo_partita, refused):
    refused("not_session_changeur", services.cash_exchange_record, session=game.session, by=capo_partita,
            direction="buy_in", amount=100_00)  # fmt: skip


def test_a_closed_session_takes_no_exchange_nor_void(game, changeur, commissario):
    tablet = Tablet(changeur)
    line = tablet.post(url(game), {"direction": "buy_in", "amount": 100_00}).json()["exchange"]
    floor_services.table_session_close(session=game.session, by=commissario)
    api_refused(tablet, url(game), {"direction": "buy_in", "amount": 100_00}, 409, "session_closed")
    api_refused(tablet, f"/api/cash-exchanges/{line['id']}/void/", {"reason": "x"}, 409, "session_closed")
    api_refused(Tablet(commissario), f"/api/cash-exchanges/{line['id']}/void/", {"reason": "x"}, 409, "session_closed")
    assert tablet.get(url(game)).json()["count"] == 1  # he still reads it


def test_the_close_puts_the_registers_totals_into_the_sessions_stream(game, changeur, commissario):
    tablet = Tablet(changeur)
    tablet.post(url(game), {"direction": "buy_in", "amount": 700_00})
    line = tablet.post(url(game), {"direction": "cash_out", "amount": 200_00}).json()["exchange"]
    tablet.post(url(game), {"direction": "cash_out", "amount": 50_00})
    tablet.post(f"/api/cash-exchanges/{line['id']}/void/", {"reason": "no such cash-out"})
    floor_services.table_session_close(session=game.session, by=commissario)
    assert events(game, "cash.session_totals") == [
        {"buy_ins": 700_00, "cash_outs": 50_00, "net": 650_00, "count": 2, "voided": 1, "unnamed": 750_00}
    ]


def test_a_session_without_exchanges_closes_without_totals(game, commissario):
    floor_services.table_session_close(session=game.session, by=commissario)
    assert events(game, "cash.session_totals") == []


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "body",
    [
        {"direction": "buy_in", "amount": 0},
        {"direction": "buy_in", "amount": -100},
        {"direction": "buy_in", "amount": 1_000_000_01},
        {"direction": "buy_in", "amount": 10.5},
        {"direction": "buy_in", "amount": "1e3"},
        {"direction": "buy_in", "amount": True},
        {"direction": "buy_in"},
        {"direction": "chips", "amount": 100_00},
        {"amount": 100_00},
        {"direction": "buy_in", "amount": 100_00, "patron": 999_999_999},
        {"direction": "buy_in", "amount": 100_00, "patron": "x"},
        {"direction": "buy_in", "amount": 100_00, "seat": 1},
    ],
    ids=["zero", "negative", "above-max", "float", "exponent", "boolean", "no-amount", "bad-direction",
         "no-direction", "unknown-patron", "patron-not-id", "unknown-field"],
)
def test_bad_input_is_refused_and_writes_nothing(game, changeur, body):
    api_refused(Tablet(changeur), url(game), body, 400, "invalid_input")


@pytest.mark.parametrize(
    ("direction", "amount", "code"),
    [("buy_in", 0, "bad_amount"), ("buy_in", -1, "bad_amount"), ("buy_in", 1.0, "bad_amount"),
     ("buy_in", 1_000_000_01, "exchange_above_maximum"), ("sideways", 100, "bad_direction")],
    ids=["zero", "negative", "float", "above-max", "direction"],
)
def test_the_service_refuses_bad_values_itself(game, changeur, refused, direction, amount, code):
    refused(code, services.cash_exchange_record, session=game.session, by=changeur, direction=direction, amount=amount)


def test_a_patron_who_never_sat_at_the_table_is_refused(game, changeur):
    stranger = PatronFactory()
    api_refused(Tablet(changeur), url(game), {"direction": "buy_in", "amount": 100_00, "patron": stranger.pk}, 400,
            "patron_not_at_table")  # fmt: skip


# --------------------------------------------------------------------------- voids


def test_the_changeur_voids_his_line_once(game, changeur):
    tablet = Tablet(changeur)
    line = tablet.post(url(game), {"direction": "buy_in", "amount": 300_00}).json()["exchange"]
    void = f"/api/cash-exchanges/{line['id']}/void/"
    r = tablet.post(void, {"reason": "typed twice"})
    assert r.status_code == 200, r.json()
    voided = r.json()["exchange"]
    assert (voided["voided"], voided["voided_by"], voided["void_reason"]) == (True, changeur.pk, "typed twice")
    assert r.json()["totals"]["buy_ins"] == 0 and r.json()["totals"]["voided"] == 1
    api_refused(tablet, void, {"reason": "again"}, 409, "exchange_already_voided")
    assert events(game, "cash.exchange_voided") == [
        {"number": 1, "direction": "buy_in", "amount": 300_00, "patron": None, "reason": "typed twice",
         "at": events(game, "cash.exchange_voided")[0]["at"]}
    ]  # fmt: skip
    assert CashExchange.objects.count() == 1  # never deleted


def test_a_void_without_a_reason_is_refused(game, changeur, refused):
    tablet = Tablet(changeur)
    line = tablet.post(url(game), {"direction": "buy_in", "amount": 300_00}).json()["exchange"]
    api_refused(tablet, f"/api/cash-exchanges/{line['id']}/void/", {"reason": " "}, 400, "invalid_input")
    refused("reason_required", services.cash_exchange_void, exchange=CashExchange.objects.get(pk=line["id"]),
            by=changeur, reason="\u200b")  # fmt: skip


def test_the_commissario_voids_any_line(game, changeur, commissario):
    line = Tablet(changeur).post(url(game), {"direction": "buy_in", "amount": 300_00}).json()["exchange"]
    r = Tablet(commissario).post(f"/api/cash-exchanges/{line['id']}/void/", {"reason": "disputed"})
    assert r.status_code == 200 and r.json()["exchange"]["voided_by"] == commissario.pk


def test_nobody_else_voids(game, make_game, changeur, capo_partita, auditor, direzione, make_user):
    line = Tablet(changeur).post(url(game), {"direction": "buy_in", "amount": 300_00}).json()["exchange"]
    void = f"/api/cash-exchanges/{line['id']}/void/"
    other = make_game("venezia")
    for user in (capo_partita, auditor, direzione, other.session.changeur):
        api_refused(Tablet(user), void, {"reason": "x"}, 403, "permission_denied")
    # relieved, he voids no more; his successor does not void his predecessor's line
    relief = make_user("relief", Role.CHANGEUR)
    floor_services.table_session_staff_change(session=game.session, by=game.commissario, changeur=relief, reason="x")
    api_refused(Tablet(changeur), void, {"reason": "x"}, 403, "permission_denied")
    api_refused(Tablet(relief), void, {"reason": "x"}, 403, "not_exchange_recorder")
    assert Tablet(relief).post("/api/cash-exchanges/999999/void/", {"reason": "x"}).status_code == 404


# --------------------------------------------------------------------------- one transaction


def test_an_exchange_whose_event_fails_leaves_no_line(game, changeur, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the trail is unreachable")

    monkeypatch.setattr(_common, "record", broken)
    with pytest.raises(RuntimeError):
        services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=100_00)
    assert not CashExchange.objects.exists()


def test_a_void_whose_event_fails_leaves_the_line_standing(game, changeur, monkeypatch):
    line = services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=100_00)

    def broken(**kwargs):
        raise RuntimeError("the trail is unreachable")

    monkeypatch.setattr(_common, "record", broken)
    with pytest.raises(RuntimeError):
        services.cash_exchange_void(exchange=line, by=changeur, reason="x")
    line.refresh_from_db()
    assert not line.voided and line.void_reason == ""


def test_the_database_refuses_a_line_required_to_be_named_without_a_patron(game, changeur):
    line = services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=100_00)
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        CashExchange.objects.filter(pk=line.pk).update(identification_required=True)


# --------------------------------------------------------------------------- reads


def test_readers_of_the_session_read_the_register(game, changeur, capo_partita, auditor, commissario, outsider):
    Tablet(changeur).post(url(game), {"direction": "buy_in", "amount": 100_00})
    for user in (changeur, capo_partita, auditor, commissario):
        assert Tablet(user).get(url(game)).json()["count"] == 1
    assert Tablet(outsider).get(url(game)).status_code == 403
    assert Tablet(None).get(url(game)).status_code == 401
    assert Tablet(auditor).get("/api/sessions/999999/cash-exchanges/").status_code == 404
    assert Tablet(auditor).get("/api/sessions/999999/cash-exchanges/totals/").status_code == 404


def test_the_list_takes_as_many_queries_for_many_lines_as_for_one(game, changeur, auditor):
    tablet, reader = Tablet(changeur), Tablet(auditor)
    tablet.post(url(game), {"direction": "buy_in", "amount": 100_00, "patron": game.seat(2).pk})
    reader.get(url(game))  # (the first read caches the reader's roles)

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert reader.get(url(game)).status_code == 200
        return len(ctx.captured_queries)

    one = queries()
    for n in range(8):
        line = tablet.post(url(game), {"direction": "cash_out", "amount": 10_00 + n,
                                       "patron": game.seat(2 + n % 6).pk}).json()["exchange"]  # fmt: skip
        if n % 3 == 0:
            tablet.post(f"/api/cash-exchanges/{line['id']}/void/", {"reason": "x"})
    assert reader.get(url(game)).json()["count"] == 9
    assert queries() == one


def test_a_refused_service_call_raises_an_application_error_with_its_code(game, changeur):
    with pytest.raises(ApplicationError) as exc:
        services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=THRESHOLD)
    assert exc.value.code == "patron_required"
