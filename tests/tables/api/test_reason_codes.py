"""Every write that takes a reason answers as its API description says (a QA walk of the
README found them saying a blank reason was 400 `reason_required`): a reason missing or
blank is 400 `invalid_input` naming the field; one of invisible characters alone (a
zero-width space, a BOM) is 400 `reason_required`. Nothing is written either way."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from audit.models import AuditEvent
from audit.reports import registers
from floor import services as floor_services
from floor.roles import Role
from tables import report_selectors, services

from .conftest import Tablet, dump

pytestmark = pytest.mark.django_db


@dataclass
class World:
    game: Any
    users: dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    # (the world) -> (who posts, the URL, the body without its reason)
    prepare: Callable[[World], tuple[Any, str, dict[str, Any]]]
    field: str = "reason"


def _annul(w: World):
    tablet = Tablet(w.game.capo)
    coup = tablet.ok(tablet.post(f"/api/sessions/{w.game.session.pk}/coups/"), 201)["coup"]["id"]
    return w.game.capo, f"/api/coups/{coup}/annul/", {}


def _bar(w: World):
    return w.game.capo, f"/api/sessions/{w.game.session.pk}/bars/", {"patron": w.game.seat(2).pk}


def _void_card(w: World):
    return w.game.capo, f"/api/sessions/{w.game.session.pk}/void-cards/", {"card": "2H"}


def _minimum(w: World):
    return w.users["commissario"], f"/api/sessions/{w.game.session.pk}/minimum/", {"minimum": 200_00}


def _staff(w: World):
    relief = w.users["make_user"]("capo_relief", Role.CAPO_PARTITA)
    return w.users["commissario"], f"/api/sessions/{w.game.session.pk}/staff/", {"capo_partita": relief.pk}


def _interrupt(w: World):
    return w.users["commissario"], f"/api/sessions/{w.game.session.pk}/interrupt/", {}


def _cash_void(w: World):
    changeur = w.game.session.changeur
    tablet = Tablet(changeur)
    line = tablet.ok(
        tablet.post(f"/api/sessions/{w.game.session.pk}/cash-exchanges/", {"direction": "buy_in", "amount": 90_00}),
        201,
    )["exchange"]["id"]
    return changeur, f"/api/cash-exchanges/{line}/void/", {}


def _closed_session(w: World):
    floor_services.table_session_close(session=w.game.session, by=w.users["commissario"])


def _cash_count_correct(w: World):
    _closed_session(w)
    count = services.cash_count_record(session=w.game.session, by=w.users["commissario"], float_issued=0, counted=0)
    return w.users["commissario"], f"/api/cash-counts/{count.pk}/correct/", {"counted": 1_00}


def _closed_day(w: World):
    floor_services.gaming_day_close(gaming_day=w.game.session.gaming_day, by=w.users["commissario"],
                                    open_sessions="close")  # fmt: skip
    day, table = w.game.session.gaming_day, w.game.session.table
    second = w.users["make_user"]("direzione_two", Role.DIREZIONE)
    count = registers.cagnotte_count_record(
        gaming_day=day, table=table, by=w.users["direzione"], witness=second,
        counted=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk),
    )  # fmt: skip
    return count, second


def _cagnotte_count_correct(w: World):
    count, second = _closed_day(w)
    body = {"counted": count.counted + 1_00, "witness": second.pk}
    return w.users["direzione"], f"/api/cagnotte-counts/{count.pk}/correct/", body


def _register_correct(w: World):
    _, second = _closed_day(w)
    reg = registers.control_register_prepare(gaming_day=w.game.session.gaming_day, by=w.users["direzione"])
    registers.control_register_sign(register=reg, by=w.users["direzione"])
    registers.control_register_sign(register=reg, by=second)
    return w.users["direzione"], f"/api/control-registers/{reg.pk}/correct/", {}


CASES = [
    Case("coup annul", _annul),
    Case("bar", _bar),
    Case("card void", _void_card),
    Case("minimum change", _minimum),
    Case("staff change", _staff),
    Case("interruption", _interrupt),
    Case("cash exchange void", _cash_void),
    Case("drawer count correction", _cash_count_correct),
    Case("cagnotte count correction", _cagnotte_count_correct, field="note"),
    Case("control register correction", _register_correct),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_blank_reason_is_invalid_input_and_an_invisible_one_reason_required(
    case, make_game, commissario, direzione, make_user
):
    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2)
    user, url, body = case.prepare(World(game, {"commissario": commissario, "direzione": direzione,
                                                "make_user": make_user}))  # fmt: skip
    tablet = Tablet(user, check_game=False)
    written = lambda: ({k: v for k, v in dump().items() if k != "IdempotencyKey"}, AuditEvent.objects.count())  # noqa: E731
    before = written()
    for reason in (None, "", "   "):  # missing or blank
        answer = tablet.post(url, body if reason is None else {**body, case.field: reason})
        error = answer.json()["error"]
        assert (answer.status_code, error["code"]) == (400, "invalid_input"), (reason, answer.json())
        assert set(error["details"]) == {case.field}
    answer = tablet.post(url, {**body, case.field: "\u200b\ufeff"})  # invisible characters only
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "reason_required"), answer.json()
    assert written() == before
    # What the API description says of it (drf-spectacular's schema, the /api/docs/ page).
    [operation] = [path["post"] for name, path in _schema()["paths"].items() if _matches(name, url) and "post" in path]
    said = operation.get("description", "") + " ".join(
        r.get("description", "") for r in operation.get("responses", {}).values()
    )
    assert "(missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 " \
           "`reason_required`)" in " ".join(said.split()), said  # fmt: skip


@functools.cache
def _schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _matches(template: str, url: str) -> bool:
    """/api/coups/{id}/annul/ against /api/coups/12/annul/."""
    a, b = template.strip("/").split("/"), url.strip("/").split("/")
    return len(a) == len(b) and all(x == y or (x.startswith("{") and y.isdigit()) for x, y in zip(a, b, strict=True))
