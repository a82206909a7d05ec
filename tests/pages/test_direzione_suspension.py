"""The floor page and the tablet page when the Direzione Giochi suspended play (RULES.md §6:
its decision is final). QA: the Commissario's floor page offered him "Resume play" on a table
the Direzione had suspended, and resumed it; the tablet's banner said the Commissario had
interrupted play. The page now says whose suspension it is, offers the resume form only to
whoever may lift it (the Direzione, or one holding both roles), and the service refuses the
Commissario's post (an old page) with nothing written."""

from __future__ import annotations

import uuid

import pytest

from audit.models import AuditEvent
from floor import services as floor_services
from floor.models import SessionInterruption
from floor.roles import Role

pytestmark = pytest.mark.django_db

DIREZIONE_SAYS = "The Direzione Giochi suspended play at this table: only the Direzione resumes it."
DIREZIONE_SAYS_IT = "La Direzione Giochi ha sospeso il gioco a questo tavolo: solo la Direzione può farlo riprendere."


def post(client, table, action, **data):
    data["idempotency_key"] = str(uuid.uuid4())
    return client.post(f"/floor/tables/{table.pk}/{action}/", data)


@pytest.fixture
def director_commissario(make_user):
    return make_user("direttore_di_sala", Role.COMMISSARIO, Role.DIREZIONE)


def test_the_commissario_is_told_the_suspension_is_the_direzione_s_and_offered_no_resume(
    client_for, game, direzione
):
    table, session = game.session.table, game.session
    assert post(client_for(direzione), table, "interrupt", session=session.pk, reason="disputa").status_code == 200
    assert SessionInterruption.objects.get(session=session).interrupted_as == "direzione"

    client = client_for(game.commissario)
    resume_url = f"/floor/tables/{table.pk}/resume/"
    for url in ("/floor/", f"/floor/tables/{table.pk}/live/"):
        html = client.get(url).content.decode()
        assert "suspended by the Direzione Giochi" in html, url  # the card's status
    html = client.get("/floor/").content.decode()
    assert DIREZIONE_SAYS in html and resume_url not in html
    it = client.get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert DIREZIONE_SAYS_IT in it and "sospeso dalla Direzione Giochi" in it and resume_url not in it

    # A page loaded before the suspension still has the form: its post is refused, nothing written.
    events = AuditEvent.objects.count()
    refused = post(client, table, "resume", session=session.pk)
    assert refused.status_code == 403 and DIREZIONE_SAYS in refused.content.decode()
    refused_it = client.post(f"/floor/tables/{table.pk}/resume/", {"session": session.pk,
                             "idempotency_key": str(uuid.uuid4())}, HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    assert refused_it.status_code == 403 and DIREZIONE_SAYS_IT in refused_it.content.decode()
    session.refresh_from_db()
    assert session.status == "interrupted" and AuditEvent.objects.count() == events
    assert SessionInterruption.objects.get(session=session).resumed_at is None

    # The Direzione, and the user holding both roles, are offered the form and resume.
    html = client_for(direzione).get("/floor/").content.decode()
    assert resume_url in html and DIREZIONE_SAYS not in html
    assert post(client_for(direzione), table, "resume", session=session.pk).status_code == 200
    session.refresh_from_db()
    assert session.status == "open"


def test_the_dual_role_user_suspends_as_the_direzione_and_lifts_it(client_for, game, director_commissario):
    table, session = game.session.table, game.session
    client = client_for(director_commissario)
    assert post(client, table, "interrupt", session=session.pk, reason="disputa").status_code == 200
    assert SessionInterruption.objects.get(session=session).interrupted_as == "direzione"
    assert f"/floor/tables/{table.pk}/resume/" not in client_for(game.commissario).get("/floor/").content.decode()
    html = client.get("/floor/").content.decode()
    assert f"/floor/tables/{table.pk}/resume/" in html and DIREZIONE_SAYS not in html
    assert post(client, table, "resume", session=session.pk).status_code == 200
    session.refresh_from_db()
    assert session.status == "open"


def test_the_commissario_s_own_suspension_is_his_to_lift_as_before(client_for, game, make_user):
    table, session = game.session.table, game.session
    assert post(client_for(game.commissario), table, "interrupt", session=session.pk, reason="count").status_code == 200
    other = client_for(make_user("commissario_2", Role.COMMISSARIO))
    html = other.get("/floor/").content.decode()
    assert f"/floor/tables/{table.pk}/resume/" in html
    assert DIREZIONE_SAYS not in html and "suspended by the Direzione Giochi" not in html
    assert post(other, table, "resume", session=session.pk).status_code == 200
    session.refresh_from_db()
    assert session.status == "open"


@pytest.mark.parametrize(("by", "banner"), [
    ("direzione", "Play is suspended by the Direzione Giochi: only the Direzione resumes it."),
    ("commissario", "Play is interrupted by the Commissario."),
])  # fmt: skip
def test_the_tablet_banner_says_whose_suspension_it_is(client_for, game, direzione, by, banner):
    user = direzione if by == "direzione" else game.commissario
    floor_services.table_session_interrupt(session=game.session, by=user, reason="disputa")
    for reader in (game.capo, game.commissario):
        page = client_for(reader).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
        assert banner in page, reader.username
        assert "/resume/" not in page
    if by == "direzione":
        page = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it")
        assert "Il gioco è sospeso dalla Direzione Giochi: solo la Direzione può farlo riprendere." in page.content.decode()
        assert "Play is interrupted by the Commissario." not in client_for(game.capo).get(
            f"/tablet/sessions/{game.session.pk}/").content.decode()  # fmt: skip
