"""Bad input on every endpoint: a 4xx with a stable code in the one error shape, never a
500, and nothing written (rows, audit events, tokens all unchanged)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.utils import timezone

from floor import services
from floor.models import TableSession
from tests.factories import SiteFactory, TableFactory

from .conftest import World, dump

pytestmark = pytest.mark.django_db

MISSING = 999_999


def _nothing(w: World) -> None:
    return None


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    url: Callable[[World], str]
    body: Callable[[World], Any]
    status: int
    code: str
    user: str = "commissario"
    prepare: Callable[[World], None] = field(default=_nothing)


def session_body(w: World, **overrides) -> dict[str, Any]:
    body = {
        "table": w.free_table.pk,
        "capo_partita": w.free_capo.pk,
        "changeur": w.free_changeur.pk,
        "shoe_number": "S-102",
        "minimum": 100_00,
    }
    body.update(overrides)
    return body


def patron_body(**overrides) -> dict[str, Any]:
    body = {
        "first_name": "Sofía",
        "last_name": "Navarro",
        "document_type": "id_card",
        "document_number": "12345678Z",
        "nationality": "ES",
    }
    body.update(overrides)
    return body


def close_session(w: World) -> None:
    services.table_session_close(session=w.session, by=w.session.opened_by)


def capped_session(w: World) -> None:
    services.table_session_open(
        table=w.free_table, by=w.session.opened_by, capo_partita=w.free_capo,
        changeur=w.free_changeur, shoe_number="S-9", minimum=100_00, maximum=500_00,
    )


def capped_session_url(w: World) -> str:
    return f"/api/sessions/{TableSession.objects.get(table=w.free_table).pk}/minimum/"


TABLES = "/api/tables/"
DAYS = "/api/gaming-days/"
SESSIONS = "/api/sessions/"
PATRONS = "/api/patrons/"


def s(w: World, tail: str = "") -> str:
    return f"/api/sessions/{w.session.pk}/{tail}"


CASES = [
    # tables (Direzione)
    Case("table: empty", "post", lambda w: TABLES, lambda w: {}, 400, "invalid_input", "direzione"),
    Case("table: number not a number", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": "uno"}, 400, "invalid_input", "direzione"),
    Case("table: unknown casino", "post", lambda w: TABLES,
         lambda w: {"casino": MISSING, "site": w.site.pk, "number": 9}, 400, "invalid_input", "direzione"),
    Case("table: 7 seats", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9, "seats": 7}, 400, "seats_out_of_range",
         "direzione"),
    Case("table: unknown profile", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9, "profile": "baccarat"}, 400,
         "unknown_profile", "direzione"),
    Case("table: 5 decks", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9, "decks": 5}, 400, "decks_not_allowed",
         "direzione"),
    Case("table: number taken", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 1}, 409, "table_number_taken", "direzione"),
    Case("table: site of another casino", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": SiteFactory().pk, "number": 9}, 400, "site_not_in_casino",
         "direzione"),
    Case("table: negative rate", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9, "cagnotte_rate_bp": -1}, 400,
         "invalid_input", "direzione"),
    # RULES.md §4: the cagnotte's rounding unit is 1 cent to 100 euros and divides 100 euros.
    Case("table: unit of 1,000 euros", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9, "cagnotte_unit_cents": 100_000}, 400,
         "cagnotte_unit_out_of_range", "direzione"),
    Case("table: unit that does not divide 100 euros", "post", lambda w: TABLES,
         lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9, "cagnotte_unit_cents": 30}, 400,
         "cagnotte_unit_out_of_range", "direzione"),
    Case("table edit: unit of 1,000 euros", "patch", lambda w: f"/api/tables/{w.free_table.pk}/",
         lambda w: {"cagnotte_unit_cents": 100_000}, 400, "cagnotte_unit_out_of_range", "direzione"),
    Case("table edit: in play", "patch", lambda w: f"/api/tables/{w.table.pk}/", lambda w: {"seats": 9}, 409,
         "table_in_play", "direzione"),
    Case("table edit: seats not a number", "patch", lambda w: f"/api/tables/{w.free_table.pk}/",
         lambda w: {"seats": "otto"}, 400, "invalid_input", "direzione"),
    Case("table edit: start needs more seats than exist", "patch", lambda w: f"/api/tables/{w.free_table.pk}/",
         lambda w: {"min_seats_to_start": 9}, 400, "min_seats_out_of_range", "direzione"),
    Case("table edit: unknown table", "patch", lambda w: f"/api/tables/{MISSING}/", lambda w: {"seats": 9}, 404,
         "not_found", "direzione"),
    Case("table: unknown", "get", lambda w: f"/api/tables/{MISSING}/", lambda w: None, 404, "not_found"),
    Case("tables: bad filter", "get", lambda w: "/api/tables/?casino=abc", lambda w: None, 400, "invalid_input"),
    # gaming days
    Case("day: empty", "post", lambda w: DAYS, lambda w: {}, 400, "invalid_input"),
    Case("day: second open day", "post", lambda w: DAYS, lambda w: {"casino": w.casino.pk}, 409,
         "gaming_day_already_open"),
    Case("day: date not a date", "post", lambda w: DAYS,
         lambda w: {"casino": w.dayless_casino.pk, "date": "domani"}, 400, "invalid_input"),
    Case("day: date already used", "post", lambda w: DAYS,
         lambda w: {"casino": w.other_day.casino_id, "date": w.other_day.date.isoformat()}, 409, "gaming_day_exists",
         prepare=lambda w: services.gaming_day_close(gaming_day=w.other_day, by=w.other_day.opened_by)),
    Case("day close: sessions still open", "post", lambda w: f"/api/gaming-days/{w.day.pk}/close/", lambda w: {},
         409, "sessions_still_open"),
    Case("day close: closed already", "post", lambda w: f"/api/gaming-days/{w.other_day.pk}/close/", lambda w: {},
         409, "gaming_day_closed",
         prepare=lambda w: services.gaming_day_close(gaming_day=w.other_day, by=w.other_day.opened_by)),
    Case("day close: unknown", "post", lambda w: f"/api/gaming-days/{MISSING}/close/", lambda w: {}, 404,
         "not_found"),
    Case("days: bad filter", "get", lambda w: "/api/gaming-days/?date=ieri", lambda w: None, 400, "invalid_input"),
    # sessions
    Case("session: empty", "post", lambda w: SESSIONS, lambda w: {}, 400, "invalid_input"),
    Case("session: second open session on a table", "post", lambda w: SESSIONS,
         lambda w: session_body(w, table=w.table.pk), 409, "table_session_already_open"),
    Case("session: minimum below 1 euro", "post", lambda w: SESSIONS, lambda w: session_body(w, minimum=99), 400,
         "minimum_out_of_range"),
    Case("session: minimum above maximum", "post", lambda w: SESSIONS,
         lambda w: session_body(w, minimum=500, maximum=400), 400, "minimum_out_of_range"),
    Case("session: minimum not a number", "post", lambda w: SESSIONS,
         lambda w: session_body(w, minimum="cento"), 400, "invalid_input"),
    Case("session: minimum a float", "post", lambda w: SESSIONS,
         lambda w: session_body(w, minimum=100.5), 400, "invalid_input"),
    Case("session: minimum absurd", "post", lambda w: SESSIONS,
         lambda w: session_body(w, minimum=10**15), 400, "invalid_input"),
    Case("session: capo without the role", "post", lambda w: SESSIONS,
         lambda w: session_body(w, capo_partita=w.session.changeur_id), 400, "not_a_capo_partita"),
    Case("session: changeur without the role", "post", lambda w: SESSIONS,
         lambda w: session_body(w, changeur=w.session.capo_partita_id), 400, "not_a_changeur"),
    Case("session: Capo Partita running another table", "post", lambda w: SESSIONS,
         lambda w: session_body(w, capo_partita=w.session.capo_partita_id), 409, "capo_partita_busy"),
    Case("session: Capo Partita of an interrupted session", "post", lambda w: SESSIONS,
         lambda w: session_body(w, capo_partita=w.interrupted.capo_partita_id), 409, "capo_partita_busy"),
    Case("session: unknown user", "post", lambda w: SESSIONS,
         lambda w: session_body(w, capo_partita=MISSING), 400, "invalid_input"),
    Case("session: blank shoe", "post", lambda w: SESSIONS, lambda w: session_body(w, shoe_number="  "), 400,
         "invalid_input"),
    Case("session: shoe at another table", "post", lambda w: SESSIONS,
         lambda w: session_body(w, shoe_number="S-101"), 409, "shoe_in_use"),
    Case("session: casino without an open day", "post", lambda w: SESSIONS,
         lambda w: session_body(w, table=TableFactory(casino=w.dayless_casino).pk), 409, "no_open_gaming_day"),
    Case("session: unknown", "get", lambda w: f"/api/sessions/{MISSING}/", lambda w: None, 404, "not_found"),
    Case("session: id beyond bigint", "get", lambda w: f"/api/sessions/{10**25}/", lambda w: None, 404,
         "not_found"),
    Case("sessions: bad status filter", "get", lambda w: "/api/sessions/?status=dancing", lambda w: None, 400,
         "invalid_input"),
    Case("interrupt: no reason", "post", lambda w: s(w, "interrupt/"), lambda w: {}, 400, "invalid_input"),
    Case("interrupt: interrupted already", "post", lambda w: f"/api/sessions/{w.interrupted.pk}/interrupt/",
         lambda w: {"reason": "again"}, 409, "session_not_open"),
    Case("interrupt: closed session", "post", lambda w: s(w, "interrupt/"), lambda w: {"reason": "late"}, 409,
         "session_closed", prepare=close_session),
    Case("interrupt: unknown", "post", lambda w: f"/api/sessions/{MISSING}/interrupt/", lambda w: {"reason": "x"},
         404, "not_found"),
    # QA: a reason of nothing but invisible characters (a zero-width space, a BOM) was taken as
    # a reason, and every page and register then showed a blank one.
    Case("interrupt: an invisible reason", "post", lambda w: s(w, "interrupt/"),
         lambda w: {"reason": "\u200b\ufeff"}, 400, "reason_required", user="direzione"),
    Case("minimum: an invisible reason", "post", lambda w: s(w, "minimum/"),
         lambda w: {"minimum": 200_00, "reason": "\u2060"}, 400, "reason_required"),
    Case("resume: open session", "post", lambda w: s(w, "resume/"), lambda w: {}, 409, "session_not_interrupted"),
    Case("resume: closed session", "post", lambda w: s(w, "resume/"), lambda w: {}, 409, "session_closed",
         prepare=close_session),
    Case("resume: reason too long", "post", lambda w: f"/api/sessions/{w.interrupted.pk}/resume/",
         lambda w: {"reason": "x" * 201}, 400, "invalid_input"),
    Case("close: closed already", "post", lambda w: s(w, "close/"), lambda w: {}, 409, "session_closed",
         prepare=close_session),
    Case("close: unknown", "post", lambda w: f"/api/sessions/{MISSING}/close/", lambda w: {}, 404, "not_found"),
    Case("minimum: below 1 euro", "post", lambda w: s(w, "minimum/"), lambda w: {"minimum": 99, "reason": "r"},
         400, "minimum_out_of_range"),
    Case("minimum: negative", "post", lambda w: s(w, "minimum/"), lambda w: {"minimum": -500, "reason": "r"},
         400, "minimum_out_of_range"),
    Case("minimum: above the maximum", "post", capped_session_url, lambda w: {"minimum": 500_01, "reason": "r"},
         400, "minimum_out_of_range", prepare=capped_session),
    Case("minimum: no reason", "post", lambda w: s(w, "minimum/"), lambda w: {"minimum": 200_00}, 400,
         "invalid_input"),
    Case("minimum: blank reason", "post", lambda w: s(w, "minimum/"), lambda w: {"minimum": 200_00, "reason": ""},
         400, "invalid_input"),
    Case("minimum: unchanged", "post", lambda w: s(w, "minimum/"), lambda w: {"minimum": 100_00, "reason": "r"},
         400, "minimum_unchanged"),
    Case("minimum: maximum below it", "post", lambda w: s(w, "minimum/"),
         lambda w: {"minimum": 200_00, "maximum": 150_00, "reason": "r"}, 400, "minimum_out_of_range"),
    Case("minimum: maximum below 1 euro", "post", lambda w: s(w, "minimum/"),
         lambda w: {"minimum": 100_00, "maximum": 50, "reason": "r"}, 400, "maximum_out_of_range"),
    Case("minimum: maximum not a number", "post", lambda w: s(w, "minimum/"),
         lambda w: {"minimum": 100_00, "maximum": "lots", "reason": "r"}, 400, "invalid_input"),
    Case("minimum: closed session", "post", lambda w: s(w, "minimum/"), lambda w: {"minimum": 200_00, "reason": "r"},
         409, "session_closed", prepare=close_session),
    Case("minimum: unknown session", "post", lambda w: f"/api/sessions/{MISSING}/minimum/",
         lambda w: {"minimum": 200_00, "reason": "r"}, 404, "not_found"),
    Case("minimum changes: unknown session", "get", lambda w: f"/api/sessions/{MISSING}/minimum-changes/",
         lambda w: None, 404, "not_found"),
    # staff changes (the croupiers' relief)
    Case("staff: no reason", "post", lambda w: s(w, "staff/"), lambda w: {"capo_partita": w.free_capo.pk}, 400,
         "invalid_input"),
    Case("staff: unchanged", "post", lambda w: s(w, "staff/"),
         lambda w: {"capo_partita": w.session.capo_partita_id, "reason": "r"}, 400, "staff_unchanged"),
    Case("staff: nobody named", "post", lambda w: s(w, "staff/"), lambda w: {"reason": "r"}, 400,
         "staff_unchanged"),
    Case("staff: capo without the role", "post", lambda w: s(w, "staff/"),
         lambda w: {"capo_partita": w.session.changeur_id, "reason": "r"}, 400, "not_a_capo_partita"),
    Case("staff: changeur without the role", "post", lambda w: s(w, "staff/"),
         lambda w: {"changeur": w.free_capo.pk, "reason": "r"}, 400, "not_a_changeur"),
    Case("staff: Capo Partita of another table", "post", lambda w: s(w, "staff/"),
         lambda w: {"capo_partita": w.interrupted.capo_partita_id, "reason": "r"}, 409, "capo_partita_busy"),
    Case("staff: unknown user", "post", lambda w: s(w, "staff/"),
         lambda w: {"capo_partita": MISSING, "reason": "r"}, 400, "invalid_input"),
    Case("staff: closed session", "post", lambda w: s(w, "staff/"),
         lambda w: {"capo_partita": w.free_capo.pk, "reason": "r"}, 409, "session_closed", prepare=close_session),
    Case("staff: unknown session", "post", lambda w: f"/api/sessions/{MISSING}/staff/",
         lambda w: {"capo_partita": w.free_capo.pk, "reason": "r"}, 404, "not_found"),
    Case("staff changes: unknown session", "get", lambda w: f"/api/sessions/{MISSING}/staff-changes/",
         lambda w: None, 404, "not_found"),
    # seats
    Case("seat: out of range", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk, "seat_number": 9}, 400, "seat_out_of_range"),
    Case("seat: zero", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk, "seat_number": 0}, 400, "seat_out_of_range"),
    Case("seat: taken", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk, "seat_number": 1}, 409, "seat_taken"),
    Case("seat: patron already seated", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.seated.pk, "seat_number": 2}, 409, "patron_already_seated"),
    Case("seat: patron seated, standing too", "post", lambda w: f"/api/sessions/{w.interrupted.pk}/seats/",
         lambda w: {"patron": w.seated.pk, "standing": True}, 409, "patron_already_seated"),
    Case("seat: standing with a number", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk, "seat_number": 2, "standing": True}, 400, "invalid_seat"),
    Case("seat: neither number nor standing", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk}, 400, "seat_number_required"),
    Case("seat: number not a number", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk, "seat_number": "due"}, 400, "invalid_input"),
    Case("seat: unknown patron", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": MISSING, "seat_number": 2}, 400, "invalid_input"),
    Case("seat: closed session", "post", lambda w: s(w, "seats/"),
         lambda w: {"patron": w.free_patron.pk, "seat_number": 2}, 409, "session_closed", prepare=close_session),
    Case("seat: unknown session", "post", lambda w: f"/api/sessions/{MISSING}/seats/",
         lambda w: {"patron": w.free_patron.pk, "seat_number": 2}, 404, "not_found"),
    Case("seats: unknown session", "get", lambda w: f"/api/sessions/{MISSING}/seats/", lambda w: None, 404,
         "not_found"),
    Case("release: released already", "post", lambda w: f"/api/seats/{w.seat.pk}/release/", lambda w: {}, 409,
         "seat_already_released", prepare=close_session),
    Case("release: unknown seat", "post", lambda w: f"/api/seats/{MISSING}/release/", lambda w: {}, 404,
         "not_found"),
    # patrons
    Case("patron: empty", "post", lambda w: PATRONS, lambda w: {}, 400, "invalid_input"),
    Case("patron: document registered", "post", lambda w: PATRONS,
         lambda w: patron_body(document_type=w.seated.document_type,
                               document_number=w.seated.document_number.lower()),
         409, "patron_already_registered"),
    Case("patron: unknown document type", "post", lambda w: PATRONS,
         lambda w: patron_body(document_type="library_card"), 400, "invalid_input"),
    Case("patron: three-letter nationality", "post", lambda w: PATRONS,
         lambda w: patron_body(nationality="ESP"), 400, "invalid_input"),
    Case("patron: nationality not letters", "post", lambda w: PATRONS,
         lambda w: patron_body(nationality="12"), 400, "invalid_nationality"),
    Case("patron: born tomorrow", "post", lambda w: PATRONS,
         lambda w: patron_body(birth_date=(timezone.localdate() + dt.timedelta(1)).isoformat()), 400,
         "invalid_birth_date"),
    Case("patron: NUL in a name", "post", lambda w: PATRONS, lambda w: patron_body(first_name="So\x00fia"), 400,
         "invalid_input"),
    Case("patron: unknown", "get", lambda w: f"/api/patrons/{MISSING}/", lambda w: None, 404, "not_found"),
    # plumbing
    Case("unknown api path", "get", lambda w: "/api/roulette/", lambda w: None, 404, "not_found"),
    Case("wrong method", "delete", lambda w: s(w), lambda w: None, 405, "method_not_allowed"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_is_refused_with_a_stable_code_and_writes_nothing(case: Case, world, role_user, api_client_for):
    case.prepare(world)
    body = case.body(world)
    url = case.url(world)
    client = api_client_for(role_user(case.user))
    before = dump()
    response = getattr(client, case.method)(url, body, format="json")
    after = dump()
    assert response.status_code == case.status, response.content
    error = response.json()["error"]
    assert error["code"] == case.code, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    assert after == before, "a refused request writes nothing"


@pytest.mark.parametrize(
    ("url", "payload", "code"),
    [
        # A number beyond a float is infinity to Python's json, which crashed int() in DRF.
        ("staff/", '{"capo_partita": 1e400, "reason": "x"}', "malformed_request"),
        ("seats/", '{"patron": -1e999, "seat_number": 8}', "malformed_request"),
        ("minimum/", '{"minimum": 1e400, "reason": "x"}', "malformed_request"),
        # An id is a whole number: 4.5 is not object 4.
        ("staff/", '{"capo_partita": 4.5, "reason": "x"}', "invalid_input"),
        ("seats/", '{"patron": 1.0, "standing": true}', "invalid_input"),
        ("staff/", '{"capo_partita": true, "reason": "x"}', "invalid_input"),
    ],
)
def test_numbers_that_are_no_id_are_a_400(url, payload, code, world, commissario, api_client_for):
    before = dump()
    response = api_client_for(commissario).post(
        f"/api/sessions/{world.session.pk}/{url}", data=payload, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == code
    assert dump() == before


@pytest.mark.parametrize("payload", ["{", "[1, 2", '"just a string"', "null"])
def test_malformed_json_is_a_400(payload, world, commissario, api_client_for):
    before = dump()
    response = api_client_for(commissario).post(
        f"/api/sessions/{world.session.pk}/minimum/", data=payload, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] in {"malformed_request", "invalid_input"}
    assert dump() == before


@pytest.mark.parametrize("payload", ['{"a":' * 5000 + "1" + "}" * 5000, "[" * 100_000 + "]" * 100_000])
def test_json_nested_too_deeply_is_a_400_not_a_500(payload, world, commissario, api_client_for):
    # json.loads raises RecursionError (not ValueError) past the interpreter's recursion limit.
    before = dump()
    response = api_client_for(commissario).post(
        f"/api/sessions/{world.session.pk}/minimum/", data=payload, content_type="application/json",
        headers={"Idempotency-Key": "deep"},
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "malformed_request"
    assert dump() == before


def test_a_list_body_is_invalid_input(world, commissario, api_client_for):
    response = api_client_for(commissario).post("/api/patrons/", json.dumps([patron_body()]),
                                                content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_input"


@pytest.mark.parametrize(
    ("user", "method", "url", "payload", "code"),
    [
        # A ChoiceField echoes the value it refuses; without an Idempotency-Key (whose stored
        # answer is cleaned) the JSON renderer could not encode the surrogate: a 500.
        ("commissario", "post", lambda w: PATRONS,
         json.dumps(patron_body()).replace('"id_card"', '"\\ud800"'), "invalid_input"),
        ("commissario", "post", lambda w: PATRONS,
         json.dumps(patron_body()).replace('"id_card"', '"x\\udfffy"'), "invalid_input"),
    ],
)
def test_an_error_echoing_a_lone_surrogate_is_a_400_not_a_500(user, method, url, payload, code, world, role_user,
                                                              api_client_for):
    before = dump()
    response = getattr(api_client_for(role_user(user)), method)(url(world), data=payload,
                                                                content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == code
    assert "\ufffd" in json.dumps(error, ensure_ascii=False)
    assert dump() == before


@pytest.mark.parametrize(
    ("media_type", "charset"),
    [
        # codecs knows transforms that are no text encoding: rot13 (str to str) crashed the
        # JSON reader, zlib raised zlib.error (500s); hex and base64 decoded another body.
        *(("application/json", charset) for charset in ["rot13", "zlib", "hex", "base64"]),
        ("application/x-www-form-urlencoded", "rot13"),
        ("multipart/form-data", "zlib"),
    ],
)
def test_a_charset_that_is_no_text_encoding_is_a_400(media_type, charset, world, commissario, api_client_for):
    before = dump()
    response = api_client_for(commissario).generic(
        "POST", f"/api/sessions/{world.session.pk}/minimum/", b'{"minimum": 20000, "reason": "r"}',
        content_type=f"{media_type}; charset={charset}", headers={"Idempotency-Key": "charset"},
    )
    assert 400 <= response.status_code < 500, response.content
    assert response.json()["error"]["code"] in {"malformed_request", "invalid_input"}
    assert dump() == before


@pytest.mark.parametrize("host", ["evil.example", "evil\x00", "a b"])
def test_a_host_not_allowed_is_the_error_shape_on_the_api(host, world, commissario, api_client_for):
    # Django's DisallowedHost, raised in a middleware before any view: its HTML 400 page.
    before = dump()
    response = api_client_for(commissario).post(
        f"/api/sessions/{world.session.pk}/minimum/", {"minimum": 200_00, "reason": "r"}, format="json",
        headers={"Host": host, "Idempotency-Key": "host"},
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"] == {"code": "malformed_request", "message": "The request is malformed.",
                                        "details": {}}
    assert dump() == before
