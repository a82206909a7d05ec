"""What the pages answer around their forms, found walking them as the floor's users: an
action's address opened as a page, a refused form shown again as it was sent, the way back
from a table's tablet page, and refusals that say what to do."""

from __future__ import annotations

import re
import uuid

import pytest
from django.utils.html import escape

from audit.models import AuditEvent, CagnotteCount, UnclaimedDeposit
from floor import services as floor_services
from floor.roles import Role
from tables import services
from tables.models import Bet, Coup

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


# --------------------------------------------------------------------------- a refused form, as it was sent


def test_a_refused_count_is_shown_again_as_it_was_typed(client_for, closed_day, direzione, auditor):
    """The Direzione's count is a plain form: refused (a bad figure), the page came back with
    every field empty, the witness unchosen; now with what was typed, to correct one figure."""
    client = client_for(direzione)
    table = closed_day.sessions.get().table
    data = {"table": table.pk, "counted": "-5", "tips": "12,50", "witness": auditor.pk, "note": "box <b>sealed</b>",
            "idempotency_key": key()}  # fmt: skip
    response = client.post(f"/desk/days/{closed_day.pk}/cagnotte/", data)
    html = response.content.decode()
    assert response.status_code == 400 and not CagnotteCount.objects.exists()
    assert f'id="counted-{table.pk}" name="counted" type="text" inputmode="decimal" value="-5"' in html
    assert f'id="tips-{table.pk}" name="tips" type="text" inputmode="decimal" value="12,50"' in html
    assert f'<option value="{auditor.pk}" selected>' in html
    assert f'value="{escape("box <b>sealed</b>")}"' in html  # escaped, as any value
    # entered: the next form is empty again
    data.update(counted="55", idempotency_key=key())
    html = client.post(f"/desk/days/{closed_day.pk}/cagnotte/", data).content.decode()
    assert (
        CagnotteCount.objects.count() == 1 and " selected>" not in html.split('name="witness"', 1)[1][:2000]
    )


def test_a_bad_figure_in_the_count_names_its_field(client_for, closed_day, direzione, auditor):
    """The count has two amounts, the cagnotte's and the tips': a figure that is no amount was
    answered "Enter an amount in euros" alone, leaving the Direzione to guess which (found
    walking the end of a day); the refusal names it, in Italian too, and the correction's as well."""
    from audit.reports import registers

    client = client_for(direzione)
    table = closed_day.sessions.get().table
    url = f"/desk/days/{closed_day.pk}/cagnotte/"
    data = {"table": table.pk, "counted": "50", "tips": "3x", "witness": auditor.pk, "idempotency_key": key()}
    r = client.post(url, data)
    assert r.status_code == 400 and not CagnotteCount.objects.exists()
    assert "Tips (staff&#x27;s): enter an amount in euros, e.g. 1,500 or 150.50." in r.content.decode()
    data.update(counted="5o", tips="3", idempotency_key=key())
    assert "Counted: enter an amount in euros" in client.post(url, data).content.decode()
    data.update(idempotency_key=key())
    italian = client.post(url, data, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "Contata: inserire un importo in euro, ad es. 1.500 o 150,50." in italian
    count = registers.cagnotte_count_record(gaming_day=closed_day, table=table, by=direzione, witness=auditor,
                                            counted=0, tips=0)  # fmt: skip
    r = client.post(f"/desk/counts/{count.pk}/correct/", {"tips": "1,2,3,4", "witness": auditor.pk,
                                                          "note": "recount", "idempotency_key": key()})  # fmt: skip
    assert r.status_code == 400 and CagnotteCount.objects.count() == 1
    assert "Tips (staff&#x27;s): enter an amount in euros" in r.content.decode()


def test_a_refused_register_correction_keeps_its_reason(client_for, closed_day, direzione, auditor, make_user):
    """The signed register's correction is a plain form too: refused, its reason came back
    empty (README: a refused desk form comes back as it was sent). Refused here because a count
    was edited in SQL (count_not_as_recorded): the Direzione sends it again once that is seen to."""
    from audit.reports import registers

    table = closed_day.sessions.get().table
    count = registers.cagnotte_count_record(gaming_day=closed_day, table=table, by=direzione, witness=auditor,
                                            counted=0, tips=0)  # fmt: skip
    register = registers.control_register_prepare(gaming_day=closed_day, by=direzione)
    registers.control_register_sign(register=register, by=direzione)
    registers.control_register_sign(register=register, by=make_user("direzione_two", Role.DIREZIONE))
    recount = registers.cagnotte_count_correct(count=count, by=direzione, witness=auditor, tips=5_00, note="tips box")
    CagnotteCount.objects.filter(pk=recount.pk).update(tips=6_00)  # behind the services
    typed = "tips of table 1 recounted <b>5.00</b>"
    r = client_for(direzione).post(f"/desk/registers/{register.pk}/correct/",
                                   {"reason": typed, "idempotency_key": key()})  # fmt: skip
    html = r.content.decode()
    assert r.status_code == 409 and registers.current_register(gaming_day_id=closed_day.pk).pk == register.pk
    assert f'id="register-reason" name="reason" type="text" maxlength="300" value="{escape(typed)}"' in html
    # the page as read afterwards: an empty form
    html = client_for(direzione).get(f"/desk/days/{closed_day.pk}/").content.decode()
    assert 'id="register-reason" name="reason" type="text" maxlength="300" value=""' in html


def test_a_refused_deposit_is_shown_again_as_it_was_typed(client_for, game):
    client = client_for(game.commissario)
    day = game.session.gaming_day
    data = {"session": game.session.pk, "kind": "winnings", "amount": "0", "coup": "", "patron": game.seat(3).pk,
            "deposited_in": "envelope 12", "note": "left on the table", "idempotency_key": key()}  # fmt: skip
    response = client.post(f"/desk/days/{day.pk}/unclaimed/", data)
    html = response.content.decode()
    assert response.status_code == 400 and not UnclaimedDeposit.objects.exists()
    assert re.search(r'<details class="tool" open>\s*<summary>Record a deposit', html)
    assert f'<option value="{game.session.pk}" selected>' in html
    assert '<option value="winnings" selected>' in html
    assert f'<option value="{game.seat(3).pk}" selected>' in html
    assert (
        'value="envelope 12"' in html
        and 'value="left on the table"' in html
        and 'name="amount" type="text" inputmode="decimal" value="0"' in html
    )


# --------------------------------------------------------------------------- the tablet


def test_a_supervisor_reading_a_table_s_tablet_page_goes_back_to_the_floor(
    client_for, game, direzione, auditor
):
    """The floor's cards lead the Commissario, the Direzione and the auditors to a table's
    tablet page; its "Your tables" led them to /tablet/, which refuses them (the table staff's)."""
    url = f"/tablet/sessions/{game.session.pk}/"
    for user in (game.commissario, direzione, auditor):
        html = client_for(user).get(url).content.decode()
        assert '<p class="crumbs"><a href="/floor/">The floor</a></p>' in html, user
        assert client_for(user).get("/floor/").status_code == 200
    html = client_for(game.capo).get(url).content.decode()
    assert '<p class="crumbs"><a href="/tablet/">Your tables</a></p>' in html
    italian = client_for(auditor).get(url, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert '<a href="/floor/">La sala</a>' in italian


def test_a_bet_over_the_bank_says_how_much_is_open(client_for, game):
    client = client_for(game.capo)
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=600_00)
    data = {
        "coup": coup.pk,
        "patron": game.seat(3).pk,
        "quick": "custom",
        "amount": "500",
        "idempotency_key": key(),
    }
    response = client.post(f"/tablet/sessions/{game.session.pk}/bet/", data)
    assert response.status_code == 400
    assert "The bets would exceed the bank: €\xa0400 of it is still open." in response.content.decode()
    assert Bet.objects.filter(coup=coup).count() == 1
    data["idempotency_key"] = key()
    html = client.post(
        f"/tablet/sessions/{game.session.pk}/bet/", data, HTTP_ACCEPT_LANGUAGE="it"
    ).content.decode()
    assert "Le puntate supererebbero il banco: ne restano scoperti €\xa0400." in html
    assert Coup.objects.get(pk=coup.pk).state == Coup.State.BETTING


def test_a_table_with_nobody_seated_says_so_not_that_everyone_declined(client_for, make_game):
    """Nobody seated (a new day's table, as the demo's): the tablet says so once, with the count
    of seats the game needs. It said it twice, in two banners one under the other, each ending
    "the Commissario seats the players from the floor"."""
    game = make_game("venezia", seated=0, standing=0, bank=None, min_seats_to_start=6)
    for lang, said, nobody in (
        ("en", "The bank cannot open yet: the game starts when at least 6 seats are taken, and 0 are taken. "
               "The Commissario seats the players from the floor.", "No player is seated at this table yet"),
        ("it", "Il banco non può ancora aprirsi: il gioco inizia quando sono occupati almeno 6 posti, e ne sono "
               "occupati 0. Il Commissario fa sedere i giocatori dalla sala.",
         "Nessun giocatore è ancora seduto a questo tavolo"),
    ):  # fmt: skip
        html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE=lang)
        html = html.content.decode()
        assert said in html and nobody not in html
        assert html.count('<p class="banner"') == 1
    assert "Every seated player has declined the first bank." not in html


def test_a_first_bank_with_too_few_seats_taken_says_why_before_it_is_tried(client_for, make_game, commissario):
    """The first bank waits for the table's min_seats_to_start seats taken (RULES.md §6): the
    tablet said only where the first bank goes, and the Capo Partita learnt the rule from the
    refusal of his try. It says why now, with the count, in English and Italian."""
    from tests.factories import PatronFactory

    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    url = f"/tablet/sessions/{game.session.pk}/"
    client = client_for(game.capo)
    html = client.get(url).content.decode()
    assert ("The bank cannot open yet: the game starts when at least 3 seats are taken, and 1 is taken. "
            "The Commissario seats the players from the floor.") in html  # fmt: skip
    # No form the rules would refuse (the bank, the passe): a link to look again once seated.
    bank_open = f"/tablet/sessions/{game.session.pk}/bank-open/"
    assert bank_open not in html and "first-bank-pass" not in html
    assert f'<a class="button-link" href="{url}">Check the seats again</a>' in html
    floor_services.seat_assign(session=game.session, patron=PatronFactory(), seat_number=2, by=commissario)
    italian = client.get(url, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert ("Il banco non può ancora aprirsi: il gioco inizia quando sono occupati almeno 3 posti, e ne sono "
            "occupati 2. Il Commissario fa sedere i giocatori dalla sala.") in italian  # fmt: skip
    assert ">Ricontrolla i posti</a>" in italian
    # A reader (the Commissario) reads why, with no link: he is the one who seats them.
    reader = client_for(commissario).get(url).content.decode()
    assert 'id="start-needs"' in reader and "Check the seats again" not in reader
    floor_services.seat_assign(session=game.session, patron=PatronFactory(), seat_number=3, by=commissario)
    html = client.get(url).content.decode()
    assert 'id="start-needs"' not in html and "Check the seats again" not in html
    assert bank_open in html


def test_a_changeur_of_another_table_is_told_it_is_not_his(client_for, game, make_user):
    other = make_user("changeur_other", Role.CHANGEUR)
    response = client_for(other).get(f"/tablet/sessions/{game.session.pk}/")
    html = response.content.decode()
    assert response.status_code == 403
    assert "Only the changeur assigned to this table session follows its play here." in html
    assert "Capo Partita" not in html.split("<main", 1)[1]


def test_a_wrong_first_sabot_is_told_which_one_the_session_was_assigned(client_for, make_game):
    """The first sabot of a session is the one the Commissario assigned at its opening: a
    refusal that did not name it left the Capo Partita to guess which number to type."""
    from tables.models import Shoe

    game = make_game("venezia", bank=None, shoe=False)
    assigned = game.session.shoe_number
    client = client_for(game.capo)
    url = f"/tablet/sessions/{game.session.pk}/shoe-load/"
    response = client.post(url, {"number": "X-999", "idempotency_key": key()})
    assert response.status_code == 400
    assert f"The first sabot is the one assigned to the session: {assigned}." in response.content.decode()
    html = client.post(url, {"number": "X-999", "idempotency_key": key()}, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert f"Il primo sabot è quello assegnato alla sessione: {escape(assigned)}." in html
    assert not Shoe.objects.filter(session=game.session).exists()
