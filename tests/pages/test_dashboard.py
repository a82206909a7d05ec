"""The Commissario's floor dashboard through the test client: who sees it, each form calls
its floor service, a retried post is entered once, the live fragment."""

from __future__ import annotations

import datetime as dt
import itertools
import re
import uuid

import pytest

from floor import services as floor_services
from floor.models import MinimumChange, Seat, StaffChange, TableSession
from tests.factories import PatronFactory, SiteFactory, UserFactory

pytestmark = pytest.mark.django_db


def post(client, table, action, key=None, **data):
    data["idempotency_key"] = key or str(uuid.uuid4())
    return client.post(f"/floor/tables/{table.pk}/{action}/", data)


def test_dashboard_for_the_floor_roles_only(client_for, commissario, direzione, auditor, capo_partita, outsider, table):
    for user in (commissario, direzione, auditor):
        assert client_for(user).get("/floor/").status_code == 200
    for user in (capo_partita, outsider):
        assert client_for(user).get("/floor/").status_code == 403


def test_dashboard_shows_each_table_with_its_session(client_for, game):
    html = client_for(game.commissario).get("/floor/").content.decode()
    assert "Table 1" in html and "Change the limits" in html
    assert html.count('class="seat taken') == 8  # eight seated in the drawing
    assert game.banker.full_name in html


def test_the_seats_lead_to_the_seating_form_only_for_whoever_has_it(client_for, game, auditor, direzione):
    """QA: each seat of a table's drawing was a link to the seating form ("?table=1&seat=3#assign-1")
    for every reader, though only the Commissario has that form: the auditor and the Direzione
    tapped it and the page came back with nothing to do. For them the seats are drawn, not
    linked; in the live fragment the page polls too."""
    table = game.session.table
    link = f'href="?table={table.pk}&amp;seat='
    for user in (auditor, direzione):
        client = client_for(user)
        for url in ("/floor/", f"/floor/tables/{table.pk}/live/"):
            html = client.get(url).content.decode()
            assert link not in html, (user.username, url)
            assert html.count('class="seat taken') == 8, (user.username, url)  # still drawn
    for url in ("/floor/", f"/floor/tables/{table.pk}/live/"):
        assert client_for(game.commissario).get(url).content.decode().count(link) == table.seats


def test_each_live_table_leads_to_its_tablet_page(client_for, game, auditor, direzione, site):
    """QA: the Commissario annuls a coup whose cards have started and opens and closes the asta
    from the table's tablet page, and the Direzione and the auditors read any table's play
    there; but /tablet/ lists only a croupier's or changeur's tables, and no page led a
    supervisor to a table's: he had to type its address. Each table card with a session now
    links to it (a table with none, to nothing)."""
    idle = floor_services.table_create(casino=site.casino, site=site, number=9, by=direzione)
    tablet = f'href="/tablet/sessions/{game.session.pk}/"'
    for user in (game.commissario, direzione, auditor):
        client = client_for(user)
        html = client.get("/floor/").content.decode()
        assert html.count(tablet) == 1, user.username
        assert client.get(f"/tablet/sessions/{game.session.pk}/").status_code == 200
        card = re.search(rf'<article[^>]*id="table-{idle.pk}".*?</article>', html, re.S).group(0)
        assert "/tablet/sessions/" not in card
    italian = client_for(direzione).get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert f"Il gioco del tavolo {game.session.table.number}, colpo per colpo" in italian


def test_only_the_commissario_writes(client_for, auditor, game):
    response = post(client_for(auditor), game.session.table, "minimum", session=game.session.pk, minimum="200", reason="x")
    assert response.status_code == 403
    assert not MinimumChange.objects.exists()


def test_change_the_minimum_with_a_reason_once(client_for, game):
    client = client_for(game.commissario)
    key = str(uuid.uuid4())
    data = {"session": game.session.pk, "minimum": "200", "reason": "busy evening"}
    first = post(client, game.session.table, "minimum", key=key, **data)
    again = post(client, game.session.table, "minimum", key=key, **data)
    assert first.status_code == again.status_code == 200
    assert MinimumChange.objects.count() == 1
    game.session.refresh_from_db()
    assert game.session.minimum == 200_00


def test_change_the_maximum_with_the_minimum_and_a_stale_page_keeps_it(client_for, game):
    client = client_for(game.commissario)
    table, session = game.session.table, game.session
    shown = {"session": session.pk, "shown_maximum": ""}
    changed = post(client, table, "minimum", minimum="200", maximum="5,000", reason="high rollers", **shown)
    assert changed.status_code == 200, changed.content.decode()
    assert "Limits: minimum €\xa0200, maximum €\xa05\u202f000." in changed.content.decode()
    session.refresh_from_db()
    assert (session.minimum, session.maximum) == (200_00, 5000_00)
    # A page loaded before that change posts the maximum it showed (none): it stays 5,000.
    stale = post(client, table, "minimum", minimum="300", maximum="", reason="later", **shown)
    assert stale.status_code == 200
    session.refresh_from_db()
    assert (session.minimum, session.maximum) == (300_00, 5000_00)
    # Cleared on purpose from a page that showed it: no maximum.
    cleared = post(client, table, "minimum", minimum="300", maximum="", reason="open again",
                   session=session.pk, shown_maximum="5\u202f000")  # fmt: skip
    assert cleared.status_code == 200 and "no maximum" in cleared.content.decode()
    session.refresh_from_db()
    assert session.maximum is None
    rows = list(MinimumChange.objects.order_by("pk").values_list("old", "new", "old_maximum", "new_maximum"))
    assert rows == [(100_00, 200_00, None, 5000_00), (200_00, 300_00, 5000_00, 5000_00), (300_00, 300_00, 5000_00, None)]
    html = client.get("/floor/").content.decode()
    assert "maximum" in html


def test_a_minimum_without_a_reason_is_refused(client_for, game):
    response = post(client_for(game.commissario), game.session.table, "minimum", session=game.session.pk, minimum="200", reason="")
    assert response.status_code == 400
    assert "Give the reason" in response.content.decode()


def test_open_a_table_session(client_for, commissario, capo_partita, changeur, table, gaming_day):
    response = post(
        client_for(commissario), table, "open",
        capo_partita=capo_partita.pk, changeur=changeur.pk, shoe_number="S-9", minimum="50", maximum="",
    )
    assert response.status_code == 200, response.content.decode()
    session = TableSession.objects.get(table=table)
    assert session.minimum == 50_00 and session.capo_partita == capo_partita and session.maximum is None


def test_relieve_the_capo_partita_from_the_floor(client_for, game, make_user, site, direzione):
    relief = make_user("capo_relief", "capo_partita", first_name="Marco", last_name="Bon")
    idle = floor_services.table_create(casino=site.casino, site=site, number=7, by=direzione)
    client = client_for(game.commissario)

    def capo_options(html: str, select_id: str) -> set[int]:
        select = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', html, re.S).group(1)
        return {int(v) for v in re.findall(r'<option value="(\d+)"', select)}

    html = client.get("/floor/").content.decode()
    # Only a Capo Partita with no table is offered, to open a table or to relieve one.
    assert capo_options(html, f"cp-{idle.pk}") == {relief.pk}
    assert capo_options(html, f"scp-{game.session.pk}") == {game.capo.pk, relief.pk}
    data = {"session": game.session.pk, "capo_partita": relief.pk, "changeur": game.session.changeur_id,
            "current_capo_partita": game.capo.pk, "current_changeur": game.session.changeur_id}  # fmt: skip
    refused = post(client, game.session.table, "staff", reason="", **data)
    assert refused.status_code == 400 and "Give the reason" in refused.content.decode()
    unchosen = post(client, game.session.table, "staff", reason="break", **{**data, "capo_partita": ""})
    assert unchosen.status_code == 400 and "Choose a member of staff." in unchosen.content.decode()
    unchanged = post(client, game.session.table, "staff", reason="x", **{**data, "capo_partita": game.capo.pk})
    assert unchanged.status_code == 400 and "run the table already" in unchanged.content.decode()
    response = post(client, game.session.table, "staff", reason="break", **data)
    assert response.status_code == 200
    assert "Staff changed: Marco Bon is the Capo Partita" in response.content.decode()
    game.session.refresh_from_db()
    assert game.session.capo_partita == relief
    assert StaffChange.objects.get().reason == "break"
    html = client.get("/floor/").content.decode()
    assert capo_options(html, f"cp-{idle.pk}") == {game.capo.pk}  # the relieved one is free again
    # A page loaded before that relief (it shows game.capo) changes nothing: it would bring
    # him back while asking only for another changeur.
    stale = post(client, game.session.table, "staff", reason="changeur break", **data)
    assert stale.status_code == 409 and "changed since the page was loaded" in stale.content.decode()
    assert StaffChange.objects.count() == 1


def test_interrupt_resume_close(client_for, game):
    client, table, session = client_for(game.commissario), game.session.table, game.session
    assert post(client, table, "interrupt", session=session.pk, reason="dispute").status_code == 200
    session.refresh_from_db()
    assert session.status == "interrupted"
    assert post(client, table, "resume", session=session.pk).status_code == 200
    unconfirmed = post(client, table, "close", session=session.pk)  # one tap is not enough
    assert unconfirmed.status_code == 400 and "Tick the box to confirm the close." in unconfirmed.content.decode()
    session.refresh_from_db()
    assert session.status == "open"
    assert post(client, table, "close", session=session.pk, confirm="yes").status_code == 200
    session.refresh_from_db()
    assert session.status == "closed"


def test_the_direzione_suspends_and_resumes_play_and_does_nothing_else_here(client_for, game, direzione):
    """QA (the Direzione's evening): "È facoltà della Direzione sospendere la partita in qualsiasi
    momento della giornata" (seed 001, RULES.md §6), but the floor page and the API refused
    him the interruption (403: the Commissario's alone). He interrupts and resumes a table
    from its card, recorded as his (its audit event names him); the page offers him no other
    form (limits, staff, seats, the close, a session's opening), which stay refused."""
    from audit.models import AuditEvent

    client, table, session = client_for(direzione), game.session.table, game.session
    html = client.get("/floor/").content.decode()
    assert f"/floor/tables/{table.pk}/interrupt/" in html
    for action in ("minimum", "staff", "seat-assign", "close", "open"):
        assert f"/floor/tables/{table.pk}/{action}/" not in html, action
    assert post(client, table, "interrupt", session=session.pk, reason="disputa al tavolo").status_code == 200
    session.refresh_from_db()
    assert session.status == "interrupted"
    event = AuditEvent.objects.filter(action="table_session.interrupted").get()
    assert event.actor_id == direzione.pk and event.payload["reason"] == "disputa al tavolo"
    html = client.get("/floor/").content.decode()
    assert f"/floor/tables/{table.pk}/resume/" in html
    assert post(client, table, "resume", session=session.pk).status_code == 200
    session.refresh_from_db()
    assert session.status == "open"
    for action, data in (("minimum", {"minimum": "200", "reason": "x"}), ("close", {"confirm": "yes"})):
        assert post(client, table, action, session=session.pk, **data).status_code == 403, action
    session.refresh_from_db()
    assert session.status == "open" and not MinimumChange.objects.exists()
    # and his home page says it is his to do
    assert "suspend and resume play" in client.get("/").content.decode()
    assert "sospendere e riprendere il gioco" in client.get("/", HTTP_ACCEPT_LANGUAGE="it").content.decode()


def test_seat_assign_and_release(client_for, commissario, table_session):
    client, table = client_for(commissario), table_session.table
    patron = PatronFactory()
    assert post(client, table, "seat-assign", session=table_session.pk, patron=patron.pk, seat_number="3").status_code == 200
    seat = Seat.objects.get(patron=patron)
    assert seat.seat_number == 3
    standing = PatronFactory()
    assert post(client, table, "seat-assign", session=table_session.pk, patron=standing.pk, seat_number="standing").status_code == 200
    assert Seat.objects.get(patron=standing).standing
    assert post(client, table, "seat-release", seat=seat.pk).status_code == 200
    seat.refresh_from_db()
    assert seat.left_at is not None


def test_a_patron_seated_elsewhere_is_said_where(client_for, commissario, table_session):
    client, table = client_for(commissario), table_session.table
    patron, standing = PatronFactory(), PatronFactory()
    assert post(client, table, "seat-assign", session=table_session.pk, patron=patron.pk, seat_number="3").status_code == 200
    assert post(client, table, "seat-assign", session=table_session.pk, patron=standing.pk, seat_number="standing").status_code == 200
    again = post(client, table, "seat-assign", session=table_session.pk, patron=patron.pk, seat_number="4")
    assert again.status_code == 409
    assert f"The patron holds seat 3 at table {table.number}; release it first." in again.content.decode()
    again = post(client, table, "seat-assign", session=table_session.pk, patron=standing.pk, seat_number="5")
    assert f"The patron stands at table {table.number}; release his place first." in again.content.decode()
    # The page offers only patrons without a place.
    free = PatronFactory()
    select = re.search(r'<select id="sp-\d+" name="patron"[^>]*>(.*?)</select>', client.get("/floor/").content.decode())
    offered = re.findall(r'<option value="(\d+)">', select.group(1))  # the patrons', not the seats' numbers
    assert str(free.pk) in offered and str(patron.pk) not in offered and str(standing.pk) not in offered


def test_htmx_post_answers_the_table_card(client_for, game):
    response = client_for(game.commissario).post(
        f"/floor/tables/{game.session.table.pk}/interrupt/",
        {"session": game.session.pk, "reason": "break", "idempotency_key": str(uuid.uuid4())},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert html.lstrip().startswith("<article") and "Play interrupted" in html


def test_live_fragment_polls(client_for, game):
    response = client_for(game.commissario).get(f"/floor/tables/{game.session.table.pk}/live/")
    assert response.status_code == 200 and "<svg" in response.content.decode()


def test_open_the_gaming_day(client_for, commissario, casino):
    response = client_for(commissario).post(f"/floor/casinos/{casino.pk}/open-day/", {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 200
    assert floor_services.GamingDay.objects.filter(casino=casino, closed_at__isnull=True).exists()


def test_open_the_gaming_day_of_another_date(client_for, commissario, casino):
    from django.utils import timezone

    client = client_for(commissario)
    url = f"/floor/casinos/{casino.pk}/open-day/"
    assert 'name="date" type="date"' in client.get("/floor/").content.decode()
    for date, code in (("30/11/2026", "A date is expected"), ("2026-02-30", "A date is expected"),
                       ("2020-01-01", "today, or the day before or after")):  # fmt: skip
        refused = client.post(url, {"date": date, "idempotency_key": str(uuid.uuid4())})
        assert refused.status_code == 400 and code in refused.content.decode()
    assert not floor_services.GamingDay.objects.exists()
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    response = client.post(url, {"date": tomorrow.isoformat(), "idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 200
    assert floor_services.GamingDay.objects.get(casino=casino).date == tomorrow


def test_the_date_offered_is_one_the_day_can_open_on(client_for, commissario, casino, settings):
    """Today; once today's day is closed, tomorrow (offering today again was a sure 409)."""
    from django.utils import timezone

    settings.GAMING_DAY_OPEN_UNSIGNED_REGISTER = "record"  # no register to sign in this test

    client = client_for(commissario)
    today = timezone.localdate()

    def offered() -> str:
        html = client.get("/floor/").content.decode()
        return re.search(rf'id="day-date-{casino.pk}" name="date" type="date" value="([0-9-]*)"', html).group(1)

    assert offered() == today.isoformat()
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    floor_services.gaming_day_close(gaming_day=day, by=commissario)
    tomorrow = today + dt.timedelta(days=1)
    assert offered() == tomorrow.isoformat()
    response = client.post(f"/floor/casinos/{casino.pk}/open-day/",
                           {"date": offered(), "idempotency_key": str(uuid.uuid4())})  # fmt: skip
    assert response.status_code == 200
    assert floor_services.GamingDay.objects.filter(casino=casino, date=tomorrow, closed_at__isnull=True).exists()


def test_a_refusal_on_the_floor_page_is_said_once(client_for, game):
    """The whole page answers a refused form: the message at the top, not on every table."""
    casino = game.session.table.casino
    make = floor_services.table_create
    make(casino=casino, site=game.session.table.site, number=99, by=UserFactory(roles=["direzione"]))
    response = client_for(game.commissario).post(f"/floor/casinos/{casino.pk}/open-day/",
                                                 {"idempotency_key": str(uuid.uuid4())})  # fmt: skip
    html = response.content.decode()
    assert response.status_code == 409
    assert html.count("The casino has an open gaming day already.") == 1


@pytest.mark.parametrize(
    ("action", "data", "message"),
    [
        ("minimum", {"minimum": "200", "reason": "a\x00b"}, "Null characters are not allowed."),
        ("interrupt", {"reason": "a\x00b"}, "Null characters are not allowed."),
        # The services check the column's length themselves (PostgreSQL would refuse the row
        # with a 500; SQLite would keep it).
        ("minimum", {"minimum": "200", "reason": "y" * 5000}, "A text is too long."),
        ("interrupt", {"reason": "y" * 201}, "A text is too long."),
    ],
)
def test_a_bad_text_in_a_floor_form_is_refused_and_writes_nothing(client_for, game, action, data, message):
    response = post(client_for(game.commissario), game.session.table, action, session=game.session.pk, **data)
    assert response.status_code == 400
    assert message in response.content.decode()
    game.session.refresh_from_db()
    assert not MinimumChange.objects.exists()
    assert game.session.status == TableSession.Status.OPEN


def test_a_form_key_sent_again_with_other_values_is_refused_not_a_500(client_for, game):
    client, key = client_for(game.commissario), str(uuid.uuid4())
    data = {"session": game.session.pk, "reason": "busy evening"}
    assert post(client, game.session.table, "minimum", key=key, minimum="200", **data).status_code == 200
    again = post(client, game.session.table, "minimum", key=key, minimum="300", **data)
    assert again.status_code == 422
    assert "already sent for another entry" in again.content.decode()
    game.session.refresh_from_db()
    assert game.session.minimum == 200_00 and MinimumChange.objects.count() == 1
    refused_first = str(uuid.uuid4())  # the same when the first use was refused
    assert post(client, game.session.table, "minimum", key=refused_first, minimum="abc", **data).status_code == 400
    assert post(client, game.session.table, "minimum", key=refused_first, minimum="250", **data).status_code == 422


def test_the_services_check_the_length_of_a_free_text(game):
    from config.errors import ApplicationError

    with pytest.raises(ApplicationError) as refused:
        floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="r" * 201)
    assert refused.value.code == "text_too_long"
    assert refused.value.details == {"field": "reason", "max_length": 200, "length": 201}
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason=" " + "r" * 200 + " ")


@pytest.mark.parametrize(("minimum", "code"), [("1e9", "Enter an amount in euros"), ("30000000", "at most 20,000,000 euro")])
def test_an_absurd_minimum_from_the_floor_form_is_refused(client_for, game, minimum, code):
    response = post(client_for(game.commissario), game.session.table, "minimum", session=game.session.pk, minimum=minimum, reason="x")
    assert response.status_code == 400
    assert code in response.content.decode()
    assert not MinimumChange.objects.exists()


def test_close_the_gaming_day_from_the_floor(client_for, game, auditor):
    day = game.session.gaming_day
    client = client_for(game.commissario)
    page = client.get("/floor/").content.decode()
    # a table in play: the page names it and offers no box saying every session is closed
    number = game.session.table.number
    assert f"Table {number} is still in play: close its session before closing the gaming day." in page
    assert f"/floor/days/{day.pk}/close/" not in page and "every table's session is closed" not in page

    def close(who, **data):
        return who.post(f"/floor/days/{day.pk}/close/", {"idempotency_key": str(uuid.uuid4()), **data})

    assert close(client_for(auditor), confirm="yes").status_code == 403
    unconfirmed = close(client)
    assert unconfirmed.status_code == 400 and "Tick the box" in unconfirmed.content.decode()
    in_play = close(client, confirm="yes")  # the session is still open: refused, as by the API
    assert in_play.status_code == 409
    # the refusal names the table, as the form it came from does (it said "Tables are still in
    # play: close their sessions first" for one table, named nowhere near it)
    result = re.search(r'<div id="floor-result"[^>]*>(.*?)</div>', in_play.content.decode(), re.S).group(1)
    assert f"Table {number} is still in play: close its session before closing the gaming day." in result
    day.refresh_from_db()
    assert day.closed_at is None
    floor_services.table_session_close(session=game.session, by=game.commissario)
    page = client.get("/floor/").content.decode()
    assert "still in play" not in page and f"/floor/days/{day.pk}/close/" in page
    assert "I confirm every table's session is closed: close the gaming day" in page
    closed = close(client, confirm="yes")
    assert closed.status_code == 200 and "closed: the end-of-day report" in closed.content.decode()
    day.refresh_from_db()
    assert day.closed_at is not None
    assert "Open the gaming day" in client.get("/floor/").content.decode()


def test_the_close_of_the_day_names_every_table_in_play_and_follows_the_htmx_close(client_for, game, make_game):
    """An interrupted session holds the day open too (the service refuses the close while any
    session is not closed); closing the last one on its card offers the close of the day at
    once, without reloading the page."""
    other = make_game("venezia")
    client = client_for(game.commissario)
    floor_services.table_session_interrupt(session=other.session, by=game.commissario, reason="dealer change")
    numbers = sorted([game.session.table.number, other.session.table.number])
    page = client.get("/floor/").content.decode()
    assert f"Tables {numbers[0]}, {numbers[1]} are still in play" in page
    floor_services.table_session_close(session=other.session, by=game.commissario)
    answer = client.post(f"/floor/tables/{game.session.table.pk}/close/",
                         {"session": game.session.pk, "confirm": "yes", "idempotency_key": str(uuid.uuid4())},
                         HTTP_HX_REQUEST="true").content.decode()  # fmt: skip
    casino = game.session.table.casino_id
    assert f'id="day-close-{casino}" class="day-close" hx-swap-oob="true"' in answer
    assert f"/floor/days/{game.session.gaming_day_id}/close/" in answer and "still in play" not in answer


@pytest.mark.parametrize("typed", ["2 000, 5", "2\u202f000. 5", "1 500, 50"])
def test_a_space_among_the_decimals_of_a_grouped_amount_is_a_form_error_not_a_500(client_for, game, typed):
    # euros_to_cents checked the spaces of the decimals only when the whole part had none:
    # '2 000, 5' reached Decimal('2000. 5') and raised InvalidOperation (a 500).
    client = client_for(game.commissario)
    client.raise_request_exception = False
    response = post(client, game.session.table, "minimum", session=game.session.pk, minimum=typed, reason="busy")
    assert response.status_code == 400
    assert not MinimumChange.objects.exists()


def test_the_drawing_of_the_table_keeps_svg_numbers_in_italian(client_for, game):
    # Italian formats 42.1 as "42,1", which is no SVG length: the seats fell off the drawing.
    html = client_for(game.commissario).get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    coords = re.findall(r'<circle cx="([^"]*)" cy="([^"]*)"', html)
    assert len(coords) > 1
    for cx, cy in coords:
        assert re.fullmatch(r"-?\d+(\.\d+)?", cx) and re.fullmatch(r"-?\d+(\.\d+)?", cy), (cx, cy)


def test_closing_a_table_with_a_coup_in_its_betting_says_it_may_be_annulled(client_for, game):
    # "A coup is in play at this table." left the Commissario with no way out; a coup with
    # no card out is annulled (README), and the refusal says so, in Italian too
    from tables import services as table_services

    table_services.coup_open(session=game.session, by=game.capo)
    client = client_for(game.commissario)
    data = {"session": game.session.pk, "confirm": "yes"}
    refused = post(client, game.session.table, "close", **data)
    assert refused.status_code == 409 and "or annulled (once its cards have started, by the Commissario)" in (
        refused.content.decode()
    )
    italian = client.post(
        f"/floor/tables/{game.session.table.pk}/close/",
        {"idempotency_key": str(uuid.uuid4()), **data},
        HTTP_ACCEPT_LANGUAGE="it",
    )
    assert "oppure viene annullato (una volta uscite le carte, dal Commissario)" in italian.content.decode()
    game.session.refresh_from_db()
    assert game.session.status == "open"


def test_the_dashboard_counts_the_coups_played_as_the_report_does(client_for, game):
    # it showed the number of the coup on the table: an annulled coup and the coup in its
    # betting counted as played, where the report counts neither
    from tables import services as table_services

    first = table_services.coup_open(session=game.session, by=game.capo)
    table_services.coup_annul(coup=first, by=game.capo, reason="the shoe was dropped")
    table_services.coup_open(session=game.session, by=game.capo)
    html = client_for(game.commissario).get("/floor/").content.decode()
    assert re.search(r"<dt>coups</dt><dd>0</dd>", html), re.findall(r"<dt>coups</dt><dd>[^<]*</dd>", html)


def test_the_floor_pages_are_never_taken_from_the_browser_cache(client_for, game):
    """The dashboard changes with every post and poll: the back button must fetch it again,
    not show the tables as they were."""
    client = client_for(game.commissario)
    for url in ("/floor/", f"/floor/tables/{game.session.table_id}/live/"):
        response = client.get(url)
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"], url


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-casino", "other-casino"])
def test_closing_a_table_offers_its_staff_at_the_other_tables_at_once(client_for, game, site, direzione, elsewhere):
    """The Capo Partita and the changeur a close frees are offered at once at the other
    tables (the open form, the relief), not only after the Commissario reloads the page:
    the htmx answer swaps the other tables' cards too (out of band). Another casino's too:
    the staff lists are the whole floor's (a Capo Partita or a changeur is not bound to a
    casino), and the dashboard shows every casino's tables (the other casino's day open: a
    table of a casino with none offers no open form)."""
    where = SiteFactory(name="Ca' Noghera") if elsewhere else site
    if elsewhere:
        floor_services.gaming_day_open(casino=where.casino, by=game.commissario)
    other = floor_services.table_create(casino=where.casino, site=where, number=5, by=direzione)
    client = client_for(game.commissario)
    session = game.session
    response = client.post(
        f"/floor/tables/{session.table.pk}/close/",
        {"session": session.pk, "confirm": "yes", "idempotency_key": str(uuid.uuid4())},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    html = response.content.decode()
    other_card = re.search(rf'<article[^>]*id="table-{other.pk}"[^>]*>(.*?)</article>', html, re.S)
    assert other_card and 'hx-swap-oob="true"' in other_card.group(0)
    capos = re.search(r'name="capo_partita"[^>]*>(.*?)</select>', other_card.group(1), re.S).group(1)
    assert f'value="{session.capo_partita_id}"' in capos
    # a refusal changes nothing elsewhere: its answer is the table's card alone
    refused = client.post(f"/floor/tables/{session.table.pk}/close/",
                          {"session": session.pk, "idempotency_key": str(uuid.uuid4())}, HTTP_HX_REQUEST="true")  # fmt: skip
    assert f'id="table-{other.pk}"' not in refused.content.decode()


def test_the_dashboard_costs_the_same_queries_however_many_tables_it_shows(
    client_for, make_game, direzione, commissario
):
    """Every card (the game, the places, the coups played) is read for all the tables at
    once, and every casino's gaming day too: the page costs as many queries with two tables as
    with five in two casinos, whatever each is doing (a coup played, a bank passing with an
    auction and its bids, no bank, no session)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tables import services

    first = make_game("venezia")
    client = client_for(first.commissario)

    def page() -> tuple[int, str]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/floor/")
        assert response.status_code == 200
        return len(queries), response.content.decode()

    def live() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/floor/tables/{first.session.table_id}/live/").status_code == 200
        return len(queries)

    passing = make_game("venezia", seated=4, standing=0, min_seats_to_start=2)
    services.coup_record(session=passing.session, by=passing.capo, cards=["7H", "6S", "KH", "KD"],
                         punta_draws=False, bets=[{"patron": passing.seat(2), "amount": 100_00}])  # fmt: skip
    succession = passing.session.successions.order_by("-number").first()
    for patron in (passing.seat(2), passing.seat(3), passing.seat(4)):
        services.offer_pass(succession=succession, by=passing.capo, patron=patron)
    auction = services.auction_open(session=passing.session, by=passing.commissario)
    services.auction_bid(auction=auction, by=passing.capo, patron=passing.seat(3), amount=300_00)
    few, _ = page()  # two tables, one with a bank, one passing: every kind of read is made
    live_few = live()
    played = make_game("venezia")
    services.coup_record(session=played.session, by=played.capo, cards=["KH", "5S", "3C", "2D", "2S"],
                         punta_draws=True, bets=[{"patron": played.seat(2), "amount": 100_00}])  # fmt: skip
    make_game("domestic", bank=None)
    # Changeurs relieved, their drawers not counted: each linked from its table's card.
    for game, n in ((played, 1), (played, 2), (passing, 3)):
        floor_services.table_session_staff_change(
            session=game.session, by=commissario, reason="break",
            changeur=UserFactory(username=f"changeur_relief_{n}", roles=["changeur"]),
        )  # fmt: skip
    elsewhere = SiteFactory(name="Ca' Noghera")
    floor_services.gaming_day_open(casino=elsewhere.casino, by=commissario)
    far = floor_services.table_create(casino=elsewhere.casino, site=elsewhere, number=9, by=direzione)
    many, html = page()
    assert html.count('class="table-card"') == 5 and f'id="table-{far.pk}"' in html
    assert html.count("Count the drawer") == 3
    assert many == few
    # read all at once, each table's game is what the tablet reads of it alone (the auction
    # and its bid included)
    from tables.selectors import session_game_state, session_game_states

    sessions = [TableSession.objects.get(pk=g.session.pk) for g in (first, played, passing)]
    together = session_game_states(sessions)
    assert together == {s.pk: session_game_state(s) for s in sessions}
    assert together[passing.session.pk]["succession"]["auction"]["bids"][0]["amount"] == 300_00
    # the part of a card that polls reads its own table only
    assert live() == live_few


def test_the_drawers_left_to_count_cost_the_same_queries_however_many(client_for, commissario, direzione, make_user):
    """No day open: the floor lists, for each casino, its last closed day's drawers not counted
    while its books are open (tables.selectors.drawers_left_to_count). Read for every casino at
    once: as many queries for one casino with one drawer as for three casinos, one with three
    drawers (one counted), one whose books are signed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audit.reports import registers
    from floor.roles import Role
    from tables import report_selectors, services

    staff = itertools.count(1)

    def closed_day(site, tables: int, *, counted: int = 0, signed: bool = False, relieved: int = 0) -> list[TableSession]:
        day = floor_services.gaming_day_open(casino=site.casino, by=commissario)
        sessions = []
        for number in range(1, tables + 1):
            table = floor_services.table_create(casino=site.casino, site=site, number=number, by=direzione)
            n = next(staff)
            session = floor_services.table_session_open(
                table=table, by=commissario, shoe_number=f"S{n}", minimum=100_00,
                capo_partita=make_user(f"capo_{n}", Role.CAPO_PARTITA), changeur=make_user(f"changeur_{n}", Role.CHANGEUR),
            )  # fmt: skip
            if number <= relieved:  # the changeur relieved: his handover not counted
                floor_services.table_session_staff_change(session=session, by=commissario, reason="break",
                                                          changeur=make_user(f"relief_{n}", Role.CHANGEUR))  # fmt: skip
            floor_services.table_session_close(session=session, by=commissario)
            sessions.append(session)
        for session in sessions[:counted]:
            services.cash_count_record(session=session, by=commissario, float_issued=0, counted=0)
        floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
        if signed:
            second = make_user(f"direzione_{next(staff)}", Role.DIREZIONE)
            for session in sessions:
                registers.cagnotte_count_record(
                    gaming_day=day, table=session.table, by=direzione, witness=second,
                    counted=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=session.table_id),
                )  # fmt: skip
            register = registers.control_register_prepare(gaming_day=day, by=direzione)
            registers.control_register_sign(register=register, by=direzione)
            registers.control_register_sign(register=register, by=second)
        return sessions

    client = client_for(commissario)

    def page() -> tuple[int, str]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/floor/")
        assert response.status_code == 200
        return len(queries), response.content.decode()

    first = closed_day(SiteFactory(name="Ca' Vendramin Calergi"), 1)
    few, html = page()
    assert html.count("drawers not counted") == 1 and f"/tablet/sessions/{first[0].pk}/#drawer-title" in html
    three = closed_day(SiteFactory(name="Ca' Noghera"), 3, counted=1, relieved=2)
    signed = closed_day(SiteFactory(name="Sanremo"), 2, signed=True, relieved=1)
    many, html = page()
    assert html.count("drawers not counted") == 2
    assert html.count("handed over at") == 2  # the handovers of the day whose books are open
    listed = [s for s in (*first, *three, *signed) if f"/tablet/sessions/{s.pk}/#drawer-title" in html]
    assert listed == [first[0], three[1], three[2]]
    assert many == few


def test_every_patron_is_within_reach_of_the_seat_form_however_large_the_registry(client_for, game):
    """A season registers patrons by the thousand: the seat forms listed the first 500 by name
    and no more, so a later name could not be seated from the floor. The page's search finds
    any patron without a place, by name or document, and the page costs the same queries
    however many patrons are registered."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from floor.models import Patron
    from tables.views_dashboard import FLOOR_PATRONS

    client = client_for(game.commissario)

    def offered(query: str = "") -> tuple[int, list[str]]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/floor/" + query)
        assert response.status_code == 200
        select = re.search(r'<select id="sp-\d+" name="patron"[^>]*>(.*?)</select>', response.content.decode())
        return len(queries), re.findall(r'<option value="(\d+)">', select.group(1))

    few, _ = offered()
    Patron.objects.bulk_create(
        Patron(first_name="Ada", last_name=f"Abati{i:04d}", document_type="id_card", document_number=f"REG{i:05d}",
               nationality="IT", created_at=timezone.now(), created_by=game.commissario)
        for i in range(FLOOR_PATRONS + 10)
    )  # fmt: skip
    late = PatronFactory(last_name="Zanetti", document_number="ZX1234567")  # after every Abati by name
    many, listed = offered()
    assert many == few and len(listed) == FLOOR_PATRONS and str(late.pk) not in listed
    for search in ("?patron=zaNEtti", "?patron=zx1234567", "?patron=Zan%20%20"):
        assert offered(search)[1] == [str(late.pk)], search
    assert offered("?patron=%00")[1] == []
    assert offered("?patron=Abati0001")[1] == [str(Patron.objects.get(last_name="Abati0001").pk)]
    seated = post(client, game.session.table, "seat-assign", session=game.session.pk, patron=late.pk,
                  seat_number="standing")  # fmt: skip
    assert seated.status_code == 200 and Seat.objects.get(patron=late, left_at__isnull=True).standing
    assert offered("?patron=zanetti")[1] == []  # he has a place now


def test_the_search_stays_on_the_table_cards_after_an_action(client_for, game):
    """A table card answered an action (htmx) with its seat form's first patrons by name again,
    the search the Commissario had made gone: the forms post with it, and the card they
    answer with lists the patrons it found."""
    client = client_for(game.commissario)
    late = PatronFactory(last_name="Zanzotto", document_number="ZZ7654321")
    page = client.get("/floor/?patron=zanzotto").content.decode()
    url = f"/floor/tables/{game.session.table.pk}/minimum/?patron=zanzotto"
    assert f'hx-post="{url}"' in page and f'action="{url}"' in page
    card = client.post(url, {"idempotency_key": str(uuid.uuid4()), "session": game.session.pk, "minimum": "150",
                             "reason": "busy night"}, HTTP_HX_REQUEST="true")  # fmt: skip
    html = card.content.decode()
    assert card.status_code == 200 and "150" in html
    select = re.search(r'<select id="sp-\d+" name="patron"[^>]*>(.*?)</select>', html)
    assert re.findall(r'<option value="(\d+)">', select.group(1)) == [str(late.pk)]
    assert f'action="{url}"'.replace("minimum", "seat-assign") in html  # and the next post keeps it


@pytest.mark.parametrize("language", ["en", "it"])
def test_the_gaming_day_is_dated_as_the_desk_and_the_exports_date_it(client_for, game, language):
    # The header printed Django's locale format ("Dec. 2, 2026", "02 Dicembre 2026") beside the
    # desk's and the exports' ISO dates: one date, one spelling.
    html = client_for(game.commissario).get("/floor/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    iso = game.session.gaming_day.date.isoformat()
    said = {"en": f"gaming day {iso}", "it": f"giornata di gioco {iso}"}[language]
    assert said in html


def test_the_banker_s_seat_in_the_drawing_says_so_in_words(client_for, game):
    """The drawing marked the banker's seat by its colours only (WCAG 1.4.1): its name says
    it too, in the page's language."""
    html = client_for(game.commissario).get("/floor/").content.decode()
    assert f"<title>Seat 1: {game.banker.full_name}, banker</title>" in html
    assert f"<title>Seat 2: {game.seat(2).full_name}</title>" in html
    html = client_for(game.commissario).get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert f"<title>Posto 1: {game.banker.full_name}, banchiere</title>" in html


@pytest.mark.parametrize("seats", [8, 9])
def test_the_drawing_s_seats_are_touch_targets_apart(seats):
    """Seats 1 and 2 overlapped and the circles were 36 px in a 320 px drawing (the narrowest
    card): at 0.8 px a unit each circle is 44 px across and the boxes of two neighbours are
    8 px apart, every seat inside the drawing (viewBox 0 0 400 256)."""
    from tables.views_dashboard import SEAT_PITCH, SEAT_R, seat_positions

    places = seat_positions(seats)
    assert [n for n, _x, _y in places] == list(range(1, seats + 1))
    assert 2 * SEAT_R * 0.8 >= 44 and (SEAT_PITCH - 2 * SEAT_R) * 0.8 >= 8
    for (_a, x1, y1), (_b, x2, y2) in itertools.pairwise(places):
        assert max(abs(x2 - x1), abs(y2 - y1)) >= SEAT_PITCH - 0.05
    for _n, x, y in places:
        assert SEAT_R + 2.5 <= x <= 400 - SEAT_R - 2.5 and SEAT_R + 2.5 <= y <= 256 - SEAT_R - 2.5
    assert places[0][1] < 200 < places[-1][1]  # seat 1 on the Capo Partita's right, the drawing's left


@pytest.mark.parametrize(("language", "said"), [
    ("en", "The minimum, €\xa0300, is above the maximum, €\xa0200: lower the minimum or raise the maximum."),
    ("it", "Il minimo, €\xa0300, è superiore al massimo, €\xa0200: abbassare il minimo o alzare il massimo."),
])  # fmt: skip
def test_a_minimum_above_the_maximum_is_said_with_both(client_for, game, language, said):
    """Walked in Italian: a maximum below the minimum, "-5" and "0" all read "The minimum must be
    at least 1 euro, at most 20,000,000 euro, and not above the maximum", which did not say
    which of the two figures to change. A minimum in range above the maximum says both."""
    client = client_for(game.commissario)
    before = (game.session.minimum, game.session.maximum)
    answer = client.post(f"/floor/tables/{game.session.table.pk}/minimum/", {
        "idempotency_key": str(uuid.uuid4()), "session": game.session.pk, "minimum": "300", "maximum": "200",
        "reason": "busy night"}, HTTP_HX_REQUEST="true", HTTP_ACCEPT_LANGUAGE=language)  # fmt: skip
    assert answer.status_code == 400  # the card again, with the refusal
    assert said in answer.content.decode()
    game.session.refresh_from_db()
    assert (game.session.minimum, game.session.maximum) == before  # nothing written
    # out of range, the range's message as before
    answer = client.post(f"/floor/tables/{game.session.table.pk}/minimum/", {
        "idempotency_key": str(uuid.uuid4()), "session": game.session.pk, "minimum": "0", "reason": "r"},
        HTTP_HX_REQUEST="true", HTTP_ACCEPT_LANGUAGE="en")  # fmt: skip
    assert "The minimum must be at least 1 euro" in answer.content.decode()


def test_no_closed_table_offers_its_open_form_while_its_casino_has_no_gaming_day_open(
    client_for, game, commissario, direzione, site
):
    """Walk of the end of day: once the Commissario had closed the gaming day, every closed
    table's card still offered "Open a session", and "Open the table" was refused with "The
    casino has no open gaming day." A closed table's form is offered only while its casino's
    day is open; with none, the casino's section says once where the day opens (its own
    form), on the page, in a card's answer and in the cards swapped out of band alike."""
    idle = floor_services.table_create(casino=site.casino, site=site, number=7, by=direzione)
    elsewhere = SiteFactory(name="Ca' Noghera")  # its day closed
    closed_day = floor_services.gaming_day_open(casino=elsewhere.casino, by=commissario)
    floor_services.gaming_day_close(gaming_day=closed_day, by=commissario, open_sessions="refuse")
    far = floor_services.table_create(casino=elsewhere.casino, site=elsewhere, number=2, by=direzione)
    far_too = floor_services.table_create(casino=elsewhere.casino, site=elsewhere, number=3, by=direzione)
    lido = SiteFactory(name="Lido")  # no day yet
    beach = floor_services.table_create(casino=lido.casino, site=lido, number=4, by=direzione)
    client = client_for(game.commissario)
    note = "No gaming day is open: the tables open once it is."

    def card(html: str, table) -> str:
        return re.search(rf'<article[^>]*id="table-{table.pk}".*?</article>', html, re.S).group(0)

    def offers_open(html: str, table) -> bool:
        return f"/floor/tables/{table.pk}/open/" in card(html, table)

    def section(html: str, casino) -> str:
        return re.search(rf'<section[^>]*aria-labelledby="casino-{casino.pk}".*?</section>', html, re.S).group(0)

    html = client.get("/floor/").content.decode()
    assert offers_open(html, idle)  # its casino's day is open
    assert not any(offers_open(html, t) for t in (far, far_too, beach))
    assert "Open the table" not in card(html, far) and "Open a session" not in card(html, far)
    assert html.count(note) == 2  # once for each casino without a day, by its own form
    for casino in (elsewhere.casino, lido.casino):
        said = section(html, casino)
        assert said.count(note) == 1 and f"/floor/casinos/{casino.pk}/open-day/" in said
    assert note not in section(html, site.casino)
    italian = client.get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert italian.count("Nessuna giornata di gioco è aperta") == 2 and italian.count("Apri il tavolo") == 1

    # A card's answer (a stale page's open, refused) offers the form no more either.
    refused = client.post(f"/floor/tables/{far.pk}/open/", {
        "capo_partita": game.capo.pk, "changeur": game.session.changeur_id, "shoe_number": "S-9",
        "minimum": "50", "idempotency_key": str(uuid.uuid4()),
    }, HTTP_HX_REQUEST="true")  # fmt: skip
    assert refused.status_code == 409
    answer = refused.content.decode()
    assert "The casino has no open gaming day." in answer and not offers_open(answer, far)
    # Nor the cards swapped out of band after a relief at a table of the open day: the
    # other casinos' tables without it, this casino's idle table with it.
    relief = UserFactory(username="capo_relief", roles=["capo_partita"])
    relieved = client.post(f"/floor/tables/{game.session.table.pk}/staff/", {
        "session": game.session.pk, "capo_partita": relief.pk, "changeur": game.session.changeur_id,
        "current_capo_partita": game.capo.pk, "current_changeur": game.session.changeur_id, "reason": "break",
        "idempotency_key": str(uuid.uuid4()),
    }, HTTP_HX_REQUEST="true")  # fmt: skip
    assert relieved.status_code == 200
    oob = relieved.content.decode()
    assert all(f'id="table-{t.pk}"' in oob and not offers_open(oob, t) for t in (far, far_too, beach))
    assert offers_open(oob, idle)

    # The day opened, its table offers the form, and its note is gone (the other's stays).
    opened = client.post(f"/floor/casinos/{lido.casino.pk}/open-day/", {"idempotency_key": str(uuid.uuid4())})
    assert opened.status_code == 200
    html = opened.content.decode()
    assert offers_open(html, beach) and note not in section(html, lido.casino)
    assert not offers_open(html, far) and html.count(note) == 1
