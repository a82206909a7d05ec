"""The registers through the API as the exports give them: times in the casino's zone
(Europe/Rome), never UTC's "Z" or "+00:00" (the control register's signed lines converted on
output only), and every croupier and changeur of a session, in turn (RULES.md art. 70)."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from rest_framework.fields import DateTimeField

from audit.models import ControlRegister, DayReport
from floor import services as floor_services
from floor.roles import Role
from tests.audit.test_reports import _count_all, _file, close
from tests.audit.test_reports import closed as closed  # the fixtures of the day the reports test
from tests.audit.test_reports import direzione2 as direzione2
from tests.audit.test_reports import media as media
from tests.audit.test_reports import world as world
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def local(at) -> str:
    return DateTimeField().to_representation(at)


def times(value, key=""):
    """Every time ("..._at", "from") in a JSON answer."""
    if isinstance(value, dict):
        for k, item in value.items():
            yield from times(item, k)
    elif isinstance(value, list):
        for item in value:
            yield from times(item, key)
    elif isinstance(value, str) and (key.endswith("_at") or key == "from"):
        yield value


def test_the_cagnotte_register_gives_its_times_in_the_casinos_zone(closed, api, auditor):
    r = api(auditor).get(f"/api/gaming-days/{closed.day.pk}/cagnotte-register/")
    assert r.status_code == 200, r.json()
    found = list(times(r.json()))
    assert len(found) > 10
    assert not [t for t in found if t.endswith("Z") or t.endswith("+00:00")], found
    s1 = closed.sessions[0]
    s1.refresh_from_db()
    session = next(t for t in r.json()["tables"] if t["table"]["number"] == 1)["sessions"][0]
    assert session["opened_at"] == local(s1.opened_at) and session["closed_at"] == local(s1.closed_at)
    zone = s1.opened_at.astimezone(ZoneInfo(settings.TIME_ZONE)).strftime("%z")  # +0100 or +0200
    assert session["opened_at"].endswith(f"{zone[:3]}:{zone[3:]}")


def test_the_control_register_gives_its_stored_times_in_the_casinos_zone_and_leaves_them_as_signed(
    closed, api, direzione, direzione2
):
    _count_all(closed, direzione, direzione2)
    url = f"/api/gaming-days/{closed.day.pk}/control-register/"
    prepared = api(direzione).post(url)
    assert prepared.status_code == 200, prepared.json()
    reg = ControlRegister.objects.get(pk=prepared.json()["id"])
    stored = reg.lines
    for answer in (prepared.json(), api(direzione).get(url).json()):
        given = [s["opened_at"] for line in answer["lines"] for s in line["sessions"]]
        as_stored = [s["opened_at"] for line in stored for s in line["sessions"]]
        assert len(given) == 2 and all(t.endswith("+00:00") for t in as_stored)  # stored in UTC, as signed
        assert given == [local(datetime.fromisoformat(t)) for t in as_stored]
        assert not [t for t in times(answer["lines"]) if t.endswith("+00:00") or t.endswith("Z")]
        # the rest of each line is as stored
        strip = [{**line, "sessions": [{k: v for k, v in s.items() if not k.endswith("_at")} for s in line["sessions"]]}
                 for line in answer["lines"]]  # fmt: skip
        kept = [{**line, "sessions": [{k: v for k, v in s.items() if not k.endswith("_at")} for s in line["sessions"]]}
                for line in stored]  # fmt: skip
        assert strip == kept
    # signing still covers the lines as stored
    assert api(direzione).post(f"/api/control-registers/{reg.pk}/sign/").json()["status"] == "first_signed"
    reg.refresh_from_db()
    assert reg.lines == stored


def test_the_cagnotte_register_names_every_croupier_and_changeur_in_turn_as_the_exports(
    world, media, api, auditor, changeur, django_capture_on_commit_callbacks
):
    s2 = world.sessions[1]  # its capo_partita relieved by capo_relief_venezia (build_day)
    s2.refresh_from_db()
    changeur_relief = UserFactory(username="changeur_relief", first_name="Giulia", last_name="Contarini",
                                  roles=[Role.CHANGEUR])  # fmt: skip
    floor_services.table_session_staff_change(
        session=s2, by=world.commissario, changeur=changeur_relief, reason="changeur's break"
    )
    close(world, django_capture_on_commit_callbacks)
    r = api(auditor).get(f"/api/gaming-days/{world.day.pk}/cagnotte-register/")
    assert r.status_code == 200, r.json()
    session = next(t for t in r.json()["tables"] if t["table"]["number"] == 2)["sessions"][0]
    croupiers = [c["username"] for c in session["croupiers"]]
    changeurs = [c["username"] for c in session["changeurs"]]
    assert croupiers == ["capo_partita", "capo_relief_venezia"]
    assert changeurs == [changeur.username, "changeur_relief"]
    assert session["croupiers"][0]["from"] == session["opened_at"] == session["changeurs"][0]["from"]
    assert session["croupiers"][1]["from"] < session["changeurs"][1]["from"]
    # the fields of old: who is in place at the close
    assert session["capo_partita"]["username"] == "capo_relief_venezia"
    assert session["changeur"]["username"] == "changeur_relief"
    # the same people in the same order as the exports' sessions register
    report = DayReport.objects.get(gaming_day=world.day)
    rows = list(csv.reader(io.StringIO(_file(report, "csv").read_text("utf-8-sig"))))
    [row] = [r for r in rows if r[:2] == ["2", "1"] and any("→" in cell for cell in r)]
    turns = [cell for cell in row if "→" in cell]
    assert [[p.rsplit("(", 1)[1].rstrip(")") for p in cell.split(" → ")] for cell in turns] == [croupiers, changeurs]
    # a session nobody relieved: one of each, from its opening
    s1 = next(t for t in r.json()["tables"] if t["table"]["number"] == 1)["sessions"][0]
    assert [c["username"] for c in s1["croupiers"]] == ["capo_partita"] and len(s1["changeurs"]) == 1
