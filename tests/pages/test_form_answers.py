"""What the pages answer around their forms, found walking them as the floor's users: an
action's address opened as a page, a refused form shown again as it was sent, the way back
from a table's tablet page, and refusals that say what to do."""

from __future__ import annotations

import uuid

import pytest

from audit.models import AuditEvent
from floor import services as floor_services

pytestmark = pytest.mark.django_db


def key() -> str:
    return str(uuid.uuid4())


# --------------------------------------------------------------------------- an action opened as a page


def test_a_floor_form_s_address_opened_as_a_page_leads_to_the_floor(client_for, game):
    """The day's open and close are plain forms: the browser stays at their address, and the
    header's language switch (which reloads it), a reload or a bookmark opened it with a GET:
    an empty 405 page. It leads to the floor instead, and writes nothing."""
    client = client_for(game.commissario)
    day, table = game.session.gaming_day, game.session.table
    before = AuditEvent.objects.count()
    for url in (f"/floor/days/{day.pk}/close/", f"/floor/casinos/{day.casino_id}/open-day/",
                f"/floor/tables/{table.pk}/minimum/", f"/floor/tables/{table.pk}/close/"):  # fmt: skip
        response = client.get(url)
        assert (response.status_code, response["Location"]) == (302, "/floor/"), url
    assert client.put(f"/floor/days/{day.pk}/close/").status_code == 405
    assert AuditEvent.objects.count() == before
    # once logged in again: the login's next is the address, which leads to the floor
    assert client_for(game.commissario).get(f"/floor/days/{day.pk}/close/", follow=True).status_code == 200


@pytest.fixture
def closed_day(game, tmp_path, settings, django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path / "media"
    day = game.session.gaming_day
    with django_capture_on_commit_callbacks(execute=True):
        floor_services.gaming_day_close(gaming_day=day, by=game.commissario, open_sessions="close")
    return day


def test_a_desk_form_s_address_opened_as_a_page_leads_to_its_day(client_for, closed_day, direzione, auditor):
    from audit.reports import registers

    client = client_for(direzione)
    table = closed_day.sessions.get().table
    count = registers.cagnotte_count_record(gaming_day=closed_day, table=table, by=direzione, witness=auditor,
                                            counted=0, tips=0)  # fmt: skip
    register = registers.control_register_prepare(gaming_day=closed_day, by=direzione)
    day_page = f"/desk/days/{closed_day.pk}/"
    before = AuditEvent.objects.count()
    for url in (f"{day_page}cagnotte/", f"{day_page}register/", f"{day_page}unclaimed/",
                f"/desk/counts/{count.pk}/correct/", f"/desk/registers/{register.pk}/sign/",
                f"/desk/registers/{register.pk}/correct/"):  # fmt: skip
        response = client.get(url)
        assert (response.status_code, response["Location"]) == (302, day_page), url
    # a row that is not there: the desk, not its day
    assert client.get("/desk/registers/999999/sign/")["Location"] == "/desk/"
    assert AuditEvent.objects.count() == before
    assert client.get(f"{day_page}cagnotte/", follow=True).status_code == 200
