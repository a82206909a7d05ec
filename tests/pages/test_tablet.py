"""The Capo Partita's tablet through Django's test client: who may see and post, every
post calls its service, a retried post (same idempotency key) is entered once."""

from __future__ import annotations

import re
import uuid

import pytest
from django.utils import timezone
from django.utils.html import escape

from floor.models import TableSession
from tables.models import Bet, Coup, RegolaMark, Succession
from tests.factories import PatronFactory, UserFactory
from tests.pages.repeated_hour import MOMENTS

pytestmark = pytest.mark.django_db


def post(client, session, action, key=None, **data):
    data["idempotency_key"] = key or str(uuid.uuid4())
    return client.post(f"/tablet/sessions/{session.pk}/{action}/", data)


def key_of(html: str) -> list[str]:
    return re.findall(r'name="idempotency_key" value="([0-9a-f-]{36})"', html)


def test_tablet_list_shows_the_capo_his_open_sessions(client_for, game):
    response = client_for(game.capo).get("/tablet/")
    assert response.status_code == 200
    assert f"/tablet/sessions/{game.session.pk}/" in response.content.decode()


def test_tablet_list_is_the_capo_partitas(client_for, commissario, outsider, db):
    assert client_for(commissario).get("/tablet/").status_code == 403
    assert client_for(outsider).get("/tablet/").status_code == 403


def test_the_changeur_follows_his_table_read_only(client_for, make_game, make_user):
    """The changeur changes chips at one table: its tablet page is his to follow (the bank,
    the bets, the outcome), read only but for his register of the cash he exchanges there
    (tests/pages/test_tablet_cash.py); not another table's, and no play he posts is entered."""
    game = make_game("venezia")
    other = make_game("venezia")
    changeur = game.session.changeur
    client = client_for(changeur)
    home = client.get("/tablet/").content.decode()
    assert f"/tablet/sessions/{game.session.pk}/" in home and f"/tablet/sessions/{other.session.pk}/" not in home
    page = client.get(f"/tablet/sessions/{game.session.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "The Capo Partita records the play; the changeur records here the cash he exchanges at the table." in html
    assert "Open the coup" not in html and "coup-open" not in html and "/bet/" not in html
    assert f'action="/tablet/sessions/{game.session.pk}/cash-exchange/"' in html and len(key_of(html)) == 1
    assert client.get(f"/tablet/sessions/{other.session.pk}/").status_code == 403
    response = post(client, game.session, "coup-open")
    assert response.status_code == 403
    assert not Coup.objects.filter(session=game.session).exists()
    assert "/tablet/" in client.get("/").content.decode()  # his home leads him there
    relieved = make_user("changeur_relieved", "changeur")  # a changeur with no table has none to follow
    assert "No open table session is assigned to you." in client_for(relieved).get("/tablet/").content.decode()


def test_anonymous_goes_to_the_login(client, game):
    response = client.get(f"/tablet/sessions/{game.session.pk}/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_session_page_renders_with_a_key_per_form(client_for, game):
    response = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Open the coup" in html
    keys = key_of(html)
    assert keys and len(keys) == len(set(keys))  # one fresh key per form


def test_another_capo_partita_gets_403_and_cannot_post(client_for, game):
    other = UserFactory(username="other_capo", roles=["capo_partita"])
    client = client_for(other)
    assert client.get(f"/tablet/sessions/{game.session.pk}/").status_code == 403
    response = post(client, game.session, "coup-open")
    assert response.status_code == 403
    assert not Coup.objects.filter(session=game.session).exists()


def test_his_own_closed_table_reads_as_closed_not_someone_elses(client_for, game):
    """Its Capo Partita still reads his closed session, as the API lets him (its final
    balances, read only; what his tablet still sends is answered `closed`); another Capo
    Partita is refused it."""
    from floor import services as floor

    floor.table_session_close(session=game.session, by=game.commissario)
    client = client_for(game.capo)
    response = client.get(f"/tablet/sessions/{game.session.pk}/")
    assert response.status_code == 200
    text = response.content.decode()
    assert "This table session is closed: its final balances are listed." in text
    assert "Open the coup" not in text and not key_of(text)
    assert f'data-queue="{game.capo.pk}:{game.session.pk}"' in text  # his waiting entries are sent from here
    assert post(client, game.session, "coup-open").status_code == 409
    assert not Coup.objects.filter(session=game.session).exists()
    other = UserFactory(username="other_capo", roles=["capo_partita"])
    response = client_for(other).get(f"/tablet/sessions/{game.session.pk}/")
    assert response.status_code == 403
    assert "Only the Capo Partita assigned to this table session may use its tablet." in response.content.decode()


def test_a_relieved_capo_and_changeur_read_the_session_they_served_and_write_nothing(client_for, game):
    """The API lets a relieved Capo Partita or changeur read the session he worked
    (floor.permissions.session_readable_by); its tablet page says the same, read only, and
    what he posts there is refused (403), nothing entered. Another table's stays refused."""
    from floor import services as floor

    old_capo, old_changeur = game.capo, game.session.changeur
    floor.table_session_staff_change(
        session=game.session, by=game.commissario, reason="break",
        capo_partita=UserFactory(username="capo_relief", roles=["capo_partita"]),
        changeur=UserFactory(username="changeur_relief", roles=["changeur"]),
    )  # fmt: skip
    stranger = UserFactory(username="other_capo", roles=["capo_partita"])
    assert client_for(stranger).get(f"/tablet/sessions/{game.session.pk}/").status_code == 403
    for user in (old_capo, old_changeur):
        client = client_for(user)
        response = client.get(f"/tablet/sessions/{game.session.pk}/")
        html = response.content.decode()
        assert response.status_code == 200, user.username
        said = {old_capo: "Read only: you are not this table&#x27;s Capo Partita.",
                old_changeur: "You were relieved as this table&#x27;s changeur at"}[user]  # fmt: skip
        assert said in html
        assert "Open the coup" not in html and not key_of(html)  # no form: nothing to write with
        assert post(client, game.session, "coup-open").status_code == 403
        assert post(client, game.session, "bank-withdraw").status_code == 403
    assert not Coup.objects.filter(session=game.session).exists()
    game.bank.refresh_from_db()
    assert game.bank.status == "active"
    # /tablet/ lists it among the sessions he worked, read only; the stranger's has none.
    for user in (old_capo, old_changeur):
        home = client_for(user).get("/tablet/").content.decode()
        assert "Sessions you worked today (read only)" in home, user.username
        assert f'href="/tablet/sessions/{game.session.pk}/"' in home
    assert "Sessions you worked today" not in client_for(stranger).get("/tablet/").content.decode()


@pytest.mark.parametrize(
    ("role", "said"),
    [
        ("commissario", "The Capo Partita records the play: here you annul a coup whose cards have started, and run "
                        "the asta."),
        ("direzione", "The Capo Partita records the play: here you annul a coup whose cards have started, when a "
                      "dispute calls for it."),
        ("auditor", "Read only: an auditor reads the play and writes nothing."),
    ],
)  # fmt: skip
def test_the_tablet_says_each_reader_why_it_takes_no_coup_from_him(client_for, game, role, said, request):
    """It told every reader "you are not this table's Capo Partita": true, and no help to the
    Commissario, who annuls a started coup and runs the asta there, nor to the others."""
    user = game.commissario if role == "commissario" else request.getfixturevalue(role)
    html = client_for(user).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert said in html
    assert "you are not this table" not in html


def test_a_closed_session_reads_as_closed_with_its_final_balances(client_for, game, auditor):
    from floor import services as floor
    from tables import services

    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    floor.table_session_close(session=game.session, by=game.commissario)
    response = client_for(auditor).get(f"/tablet/sessions/{game.session.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "The session is closed" in html and "This table session is closed: its final balances are listed." in html
    assert "Read only: an auditor reads the play and writes nothing." not in html
    # dated as the desk and the exports date (it was the locale's short date, 12/02/2026 in English)
    game.session.refresh_from_db()
    closed_on = timezone.localtime(game.session.closed_at)
    assert f"Closed on {closed_on:%Y-%m-%d} at {closed_on:%H:%M}." in html
    assert "Load the sabot" not in html and "Open the bank" not in html and "turn seat" not in html
    # Its places were released at the close: the players listed are those with a balance.
    players = html[html.index('<table class="list players" id="tablet-players">') :]
    players = players[: players.index("</table>")]
    rows = re.findall(r"<tr[^>]*>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*<td class=\"num\">(.*?)</td>", players, re.S)
    shown = {name.strip(): (seat.strip(), amount.strip()) for seat, name, amount in rows}
    assert shown == {game.seat(1).full_name: ("—", "€\xa0+285"), game.seat(2).full_name: ("—", "€\xa0-300")}, shown


def test_a_session_closed_in_the_repeated_hour_says_its_offset(client_for, game, auditor):
    """QA: on the October night the clock reads 02:00-02:59 twice: a session closed at 02:30
    CEST and one closed at 02:30 CET both read "Closed on 2026-10-25 at 02:30.". In that hour
    the time carries its UTC offset (in both languages); any other time reads as before."""
    from floor import services as floor

    floor.table_session_close(session=game.session, by=game.commissario)
    client = client_for(auditor)
    for m in MOMENTS:
        TableSession.objects.filter(pk=game.session.pk).update(closed_at=m.at)
        html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
        assert f"Closed on {m.day} at {m.minute}." in html, m
        italian = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
        assert f"Chiusa il {m.day} alle {m.minute}." in italian, m


def test_the_commissario_reads_the_tablet_but_cannot_post(client_for, game):
    client = client_for(game.commissario)
    response = client.get(f"/tablet/sessions/{game.session.pk}/")
    assert response.status_code == 200
    assert "Open the coup" not in response.content.decode()
    assert post(client, game.session, "coup-open").status_code == 403


def test_open_coup_bet_and_a_retry_with_the_same_key_is_entered_once(client_for, game):
    client = client_for(game.capo)
    assert post(client, game.session, "coup-open").status_code == 200
    coup = Coup.objects.get(session=game.session)
    key = str(uuid.uuid4())
    data = {"coup": coup.pk, "patron": game.seat(2).pk, "quick": "custom", "amount": "150"}
    first = post(client, game.session, "bet", key=key, **data)
    again = post(client, game.session, "bet", key=key, **data)
    assert first.status_code == again.status_code == 200
    assert Bet.objects.filter(coup=coup).count() == 1
    assert Bet.objects.get(coup=coup).amount == 150_00
    assert "already recorded" in again.content.decode()


def test_a_refusal_is_shown_with_its_status_and_writes_nothing(client_for, game):
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    response = post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="custom", amount="99999")
    assert response.status_code == 400
    assert "exceed the bank" in response.content.decode()
    assert not Bet.objects.exists()


def test_htmx_posts_get_the_panel_only(client_for, game):
    client = client_for(game.capo)
    response = client.post(
        f"/tablet/sessions/{game.session.pk}/coup-open/",
        {"idempotency_key": str(uuid.uuid4())},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="tablet"') and "<html" not in html


def test_a_whole_coup_with_a_reconstruction_through_the_tablet(client_for, game):
    """The banker alla Regola stands on 3 against a punta who stood: non-conforming; the
    reconstruction needs the next card (RULES.md §3.3)."""
    client = client_for(game.capo)
    banker = game.banker
    assert post(client, game.session, "regola", patron=banker.pk, declared="true").status_code == 200
    assert RegolaMark.objects.get(patron=banker).declared
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    r = post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco")
    assert r.status_code == 200, r.content.decode()
    assert post(client, game.session, "rien-ne-va-plus", coup=coup.pk).status_code == 200
    # punta 5 (2+3), banker 3 (KH + 3D): punta stands, the banker alla Regola must draw on 3.
    for rank, suit in (("2", "S"), ("K", "H"), ("3", "C"), ("3", "D")):
        assert post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit).status_code == 200
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Rule in force" in page and "against the Regola" not in page  # the punta is not alla Regola
    assert post(client, game.session, "punta", coup=coup.pk, draws="false").status_code == 200
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "banker alla Regola" in page and "against the Regola: will be reconstructed" in page
    assert post(client, game.session, "banker-stand", coup=coup.pk).status_code == 200
    coup.refresh_from_db()
    assert coup.state == Coup.State.PENDING and coup.conforming is False
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Non-conforming coup" in page and "next card of the sabot" in page
    assert "banker stood on 3, the punta having stood (" in " ".join(page.split())
    assert post(client, game.session, "reconstruction-card", coup=coup.pk, rank="5", suit="H").status_code == 200
    coup.refresh_from_db()
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker"  # 3 + 5 = 8 beats 5
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "As reconstructed (settled)" in page and "Payouts (postings)" in page
    assert "natural (abattage)" not in page  # the banker's 8 is of three cards


def test_the_result_marks_a_natural(client_for, game):
    """A punta's 9 of two cards is shown at once and wins (RULES.md §2.4): the result says
    it was a natural, on his hand, not on the banker's."""
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    assert post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco").status_code == 200
    assert post(client, game.session, "rien-ne-va-plus", coup=coup.pk).status_code == 200
    for rank, suit in (("4", "S"), ("K", "H"), ("5", "C"), ("3", "D")):
        assert post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit).status_code == 200
    coup.refresh_from_db()
    assert coup.state == Coup.State.SETTLED and coup.winner == "punta"
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    result = page[page.index('id="result-title"'):]
    punta, banker = re.search(r"<p>punta:(.*?)</p>\s*<p>banker:(.*?)</p>", result, re.S).groups()
    assert "= 9" in punta and "natural (abattage)" in punta
    assert "= 3" in banker and "natural" not in banker
    client.post("/i18n/setlang/", {"language": "it", "next": "/"})
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "naturale (battuta)" in page


def _banco_and_four_cards(client, game, cards):
    """A coup opened on the tablet, seat 2's banco, rien ne va plus, the four first cards."""
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco")
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    for rank, suit in cards:
        post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit)
    return coup


@pytest.mark.parametrize("profile", ["domestic", "chemmy-fi"])
def test_carte_against_a_banker_natural_says_no_card_is_given(client_for, make_game, profile):
    """RULES.md §2.5-6: the punta says carte, then the banker shows a natural: the card the
    punta asked for is not given. The tablet answered "The punta says carte." only, which
    sends the croupier to the sabot for a card that must not come out."""
    game = make_game(profile)
    client = client_for(game.capo)
    client.cookies["chemin_language"] = "it"
    coup = _banco_and_four_cards(client, game, (("4", "C"), ("7", "S"), ("A", "D"), ("2", "H")))  # 5 v 9
    html = post(client, game.session, "punta", coup=coup.pk, draws="true").content.decode()
    assert "La punta dice carte, ma il banchiere ha un naturale: la carta non si dà." in html
    coup.refresh_from_db()
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker" and len(coup.cards) == 4


def test_carte_without_a_banker_natural_asks_for_the_card(client_for, game):
    client = client_for(game.capo)
    coup = _banco_and_four_cards(client, game, (("4", "C"), ("7", "S"), ("A", "D"), ("K", "H")))  # 5 v 7
    html = post(client, game.session, "punta", coup=coup.pk, draws="true").content.decode()
    assert "The punta says carte." in html and "no card is given" not in html


def test_void_and_bar(client_for, game):
    client = client_for(game.capo)
    assert post(client, game.session, "void", rank="7", suit="C", reason="seen face up").status_code == 200
    assert post(client, game.session, "bar", patron=game.seat(3).pk, reason="false draw").status_code == 200
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "barred" in page and "1 voided" in page


def test_a_bad_card_is_refused_by_the_page(client_for, game):
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    response = post(client, game.session, "card", coup=coup.pk, rank="1", suit="X")
    assert response.status_code == 400


def test_unknown_action_is_404(client_for, game):
    assert post(client_for(game.capo), game.session, "nothing").status_code == 404


def test_patron_factory_is_usable(db):
    assert PatronFactory().full_name


@pytest.mark.parametrize(
    ("action", "data"),
    [
        ("bar", {"reason": "a\x00b"}),
        ("void", {"rank": "2", "suit": "H", "reason": "a\x00b"}),
        ("shoe-load", {"number": "\x00"}),
    ],
)
def test_a_null_character_in_a_form_is_refused_and_writes_nothing(client_for, game, action, data):
    from audit.models import AuditEvent
    from tables.models import FauxTirageBar, Shoe, ShoeCard

    if action == "bar":
        data = {**data, "patron": game.seat(3).pk}
    before = (AuditEvent.objects.count(), FauxTirageBar.objects.count(), Shoe.objects.count(), ShoeCard.objects.count())
    response = post(client_for(game.capo), game.session, action, **data)
    assert response.status_code == 400
    assert "Null characters are not allowed." in response.content.decode()
    after = (AuditEvent.objects.count(), FauxTirageBar.objects.count(), Shoe.objects.count(), ShoeCard.objects.count())
    assert after == before


def test_odd_form_values_are_refused_and_write_nothing(client_for, game):
    """Exploratory testing: a field sent twice, digits of another script, an unknown bank,
    a Regola mark that changes nothing."""
    from audit.models import AuditEvent

    client, two = client_for(game.capo), game.seat(2).pk
    before = AuditEvent.objects.count()
    twice = client.post(f"/tablet/sessions/{game.session.pk}/regola/",
                        {"patron": [two, two], "declared": ["true", "false"], "idempotency_key": str(uuid.uuid4())})  # fmt: skip
    assert twice.status_code == 400 and "A field was sent twice." in twice.content.decode()
    arabic_four = "\u0664"
    assert post(client, game.session, "bar", patron=arabic_four, reason="false draw").status_code == 400
    unknown = post(client, game.session, "bank-withdraw", bank="999999")
    assert unknown.status_code == 400 and "This bank is not at this table." in unknown.content.decode()
    unchanged = post(client, game.session, "regola", patron=two, declared="false")
    assert unchanged.status_code == 409 and "Regola is so already" in unchanged.content.decode()
    assert AuditEvent.objects.count() == before
    assert not RegolaMark.objects.exists()


def test_a_precise_amount_refusal_is_kept_on_the_tablet(client_for, game):
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    response = post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="custom", amount="100.001")
    assert response.status_code == 400 and "An amount has at most two decimals." in response.content.decode()


def test_its_capo_partita_is_told_the_session_is_closed(client_for, game):
    from floor import services as floor_services

    floor_services.table_session_close(session=game.session, by=game.commissario)
    response = post(client_for(game.capo), game.session, "coup-open")
    assert response.status_code == 409 and "The table session is closed." in response.content.decode()
    assert not Coup.objects.filter(session=game.session).exists()
    other = UserFactory(username="capo-other", roles=["capo_partita"])
    assert post(client_for(other), game.session, "coup-open").status_code == 403


def test_an_entry_recorded_before_the_close_gets_its_answer_again(client_for, game):
    """The tablet's queue sends an entry again after its answer was lost, and meanwhile the
    session closed: the entry was made, so its stored answer comes back, not "closed"."""
    from floor import services as floor_services

    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    key = str(uuid.uuid4())
    first = post(client, game.session, "coup-annul", key=key, coup=coup.pk, reason="power cut")
    assert first.status_code == 200
    floor_services.table_session_close(session=game.session, by=game.commissario)
    again = post(client, game.session, "coup-annul", key=key, coup=coup.pk, reason="power cut")
    html = again.content.decode()
    assert again.status_code == 200 and "already recorded: the same answer again" in html
    assert "annulled" in html and "The table session is closed." not in html
    # a new entry is told the session is closed
    assert post(client, game.session, "coup-annul", coup=coup.pk, reason="power cut").status_code == 409


def test_the_tablet_annuls_a_coup_before_its_cards(client_for, game):
    client = client_for(game.capo)
    assert post(client, game.session, "coup-open").status_code == 200
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="custom", amount="150")
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Annul this coup (before the cards)" in page
    refused = post(client, game.session, "coup-annul", coup=coup.pk, reason="  ")
    assert refused.status_code == 400 and "Give the reason." in refused.content.decode()
    response = post(client, game.session, "coup-annul", coup=coup.pk, reason="dispute at seat 2")
    html = response.content.decode()
    assert response.status_code == 200
    assert "annulled before its cards (dispute at seat 2)" in html and "Open the coup" in html
    coup.refresh_from_db()
    assert coup.state == "annulled" and coup.annul_reason == "dispute at seat 2"


def test_the_tablet_annuls_while_play_is_interrupted(client_for, game):
    from floor import services as floor_services

    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="power cut")
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Rien ne va plus" not in page and "Annul this coup (before the cards)" in page
    assert post(client, game.session, "coup-annul", coup=coup.pk, reason="power cut").status_code == 200
    coup.refresh_from_db()
    assert coup.state == "annulled"


def _cards_out(client, game, *cards: tuple[str, str]) -> Coup:
    """A coup opened on the tablet, a bet of 150 by seat 2, rien ne va plus, then `cards`."""
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="custom", amount="150")
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    for rank, suit in cards:
        post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit)
    return coup


def test_the_tablet_offers_the_capo_no_annul_once_a_card_is_out(client_for, game):
    client = client_for(game.capo)
    coup = _cards_out(client, game, ("K", "H"))
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Annul this coup" not in page
    response = post(client, game.session, "coup-annul", coup=coup.pk, reason="late")
    assert response.status_code == 403
    assert "only the Commissario di Gioco or the Direzione Giochi may annul a coup" in response.content.decode()
    coup.refresh_from_db()
    assert coup.state == "dealing"


def test_the_commissario_annuls_a_dealing_coup_from_the_tablet(client_for, game):
    capo = client_for(game.capo)
    coup = _cards_out(capo, game, ("K", "H"), ("5", "S"))
    floor = client_for(game.commissario)
    page = floor.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Annul this coup (its cards are out)" in page and "Annul this coup (before the cards)" not in page
    assert "Annul this coup (its cards are out)" not in capo.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    refused = post(floor, game.session, "coup-annul", coup=coup.pk, reason="  ")
    assert refused.status_code == 400 and "Give the reason." in refused.content.decode()
    response = post(floor, game.session, "coup-annul", coup=coup.pk, reason="tablet lost")
    html = response.content.decode()
    assert response.status_code == 200, html
    assert "Coup 1 annulled: no money moves" in html and "KH 5S" in html
    assert "annulled after its cards had started (tablet lost)" in html
    coup.refresh_from_db()
    assert (coup.state, coup.annulled_by_id, coup.cards) == ("annulled", game.commissario.pk, ["KH", "5S"])
    # The next coup opens on the Capo Partita's tablet.
    assert post(capo, game.session, "coup-open").status_code == 200
    assert Coup.objects.filter(session=game.session, state="betting").count() == 1


def test_the_direzione_annuls_a_dealing_coup_from_the_tablet_and_nothing_else(client_for, game, direzione):
    """Disputes go to the Direzione Giochi, whose decision is final (RULES.md §6): once the cards
    are out he annuls the coup on the tablet himself. The asta and the play stay others'."""
    capo = client_for(game.capo)
    coup = _cards_out(capo, game, ("K", "H"), ("5", "S"))
    board = client_for(direzione)
    page = board.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Annul this coup (its cards are out)" in page
    # The play is not his: a card, a bet or the asta is refused as to any reader.
    for action, data in (("card", {"coup": coup.pk, "rank": "3", "suit": "C"}), ("auction-open", {})):
        refused = post(board, game.session, action, **data)
        assert refused.status_code == 403, action
    response = post(board, game.session, "coup-annul", coup=coup.pk, reason="dispute: the Direzione decides")
    assert response.status_code == 200, response.content.decode()
    assert "Coup 1 annulled: no money moves" in response.content.decode()
    coup.refresh_from_db()
    assert (coup.state, coup.annulled_by_id, coup.cards) == ("annulled", direzione.pk, ["KH", "5S"])


def test_the_direzione_does_not_annul_a_coup_before_its_cards(client_for, game, direzione):
    capo = client_for(game.capo)
    assert post(capo, game.session, "coup-open").status_code == 200
    coup = Coup.objects.get(session=game.session, state="betting")
    board = client_for(direzione)
    assert "Annul this coup" not in board.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    response = post(board, game.session, "coup-annul", coup=coup.pk, reason="dispute")
    assert response.status_code == 403
    coup.refresh_from_db()
    assert coup.state == "betting"


def test_chemmy_fi_the_tablet_withdraws_a_bet_carried_to_the_replay(replay_after_tie):
    game, client = replay_after_tie
    replay = Coup.objects.filter(session=game.session).order_by("-number").first()
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "carried" in page and "bet-withdraw" in page
    response = post(client, game.session, "bet-withdraw", coup=replay.pk, patron=game.seat(2).pk)
    assert response.status_code == 200 and "takes back the bet carried from the tie" in response.content.decode()
    assert not Bet.objects.filter(coup=replay).exists()


def test_the_tablet_offers_the_withdrawal_of_a_barred_banker(client_for, game):
    from tables import services

    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(1), reason="faux tirage")
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "the banker is barred (faux tirage)" in html and "The barred banker's bank ends" in html
    assert "Open the coup" not in html


def test_domestic_the_tablet_raises_the_bank(client_for, make_game):
    from tables import services
    from tables.models import Bank

    game = make_game("domestic")
    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    client = client_for(game.capo)
    assert "Raise the bank" in client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    response = post(client, game.session, "bank-raise", bank=game.bank.pk, amount="850")
    assert response.status_code == 200 and "The bank is raised to €\xa0850." in response.content.decode()
    assert Bank.objects.get(pk=game.bank.pk).amount == 850_00
    refused = post(client, game.session, "bank-raise", bank=game.bank.pk, amount="800")
    assert refused.status_code == 400 and "A raise puts the bank above its amount, €\xa0850." in refused.content.decode()


def test_the_tablet_takes_back_the_banco_of_a_player_barred_since(client_for, game):
    from tables import services
    from tables.models import BancoCall

    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))
    client = client_for(game.capo)
    assert "bet-withdraw" not in client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    assert "bet-withdraw" in client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert post(client, game.session, "bet-withdraw", coup=coup.pk, patron=game.seat(2).pk).status_code == 200
    assert not BancoCall.objects.filter(coup=coup).exists()


def _relieve(game):
    from floor import services as floor_services

    relief = UserFactory(username="capo_relief", roles=["capo_partita"])
    floor_services.table_session_staff_change(
        session=game.session, by=game.commissario, capo_partita=relief, reason="break"
    )
    return relief


def test_a_relieved_capo_partitas_retry_gets_its_first_answer_and_nothing_new(client_for, game):
    """His tablet lost the answer to an entry made before the relief and sends it again:
    the stored answer comes back (as the API replays it), not a refusal that would make him
    think it was lost; a new entry of his is refused and writes nothing."""
    client = client_for(game.capo)
    key = str(uuid.uuid4())
    assert post(client, game.session, "coup-open", key=key).status_code == 200
    _relieve(game)

    again = post(client, game.session, "coup-open", key=key)
    assert again.status_code == 200
    html = again.content.decode()
    assert "Coup 1 open" in html and "already recorded" in html
    # ... and nothing of the table as it is now: he may no longer see it
    assert game.seat(2).full_name not in html and "Open the coup" not in html
    assert Coup.objects.filter(session=game.session).count() == 1

    coup = Coup.objects.get(session=game.session)
    fresh = post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="custom", amount="100")
    assert fresh.status_code == 403 and not Bet.objects.filter(coup=coup).exists()
    # the same key with another form is no replay either
    other = post(client, game.session, "rien-ne-va-plus", key=key, coup=coup.pk)
    assert other.status_code == 403 and coup.state == Coup.objects.get(pk=coup.pk).state


def test_a_refused_htmx_post_replaces_the_page_not_the_panel(client_for, game):
    client = client_for(game.capo)
    _relieve(game)
    response = client.post(
        f"/tablet/sessions/{game.session.pk}/coup-open/",
        {"idempotency_key": str(uuid.uuid4())},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 403
    assert response["HX-Retarget"] == "#main" and response["HX-Reswap"] == "innerHTML"
    html = response.content.decode()
    assert "<html" not in html and "runs this table now" in html and 'href="/"' in html
    assert not Coup.objects.filter(session=game.session).exists()


def test_a_damaged_form_key_is_said_in_italian(client_for, game):
    client = client_for(game.capo)
    response = client.post(
        f"/tablet/sessions/{game.session.pk}/coup-open/",
        {"idempotency_key": "a,b"},
        headers={"Accept-Language": "it"},
    )
    assert response.status_code == 400
    assert "La chiave di questo modulo è danneggiata" in response.content.decode()
    assert not Coup.objects.filter(session=game.session).exists()


def test_no_player_chosen_is_said_so(client_for, game):
    client = client_for(game.capo)
    assert post(client, game.session, "coup-open").status_code == 200
    coup = Coup.objects.get(session=game.session)
    response = post(client, game.session, "bet", coup=coup.pk, patron="", quick="custom", amount="100")
    assert response.status_code == 400
    html = response.content.decode()
    assert "Choose a player at the table." in html and "A whole number is expected." not in html


def _dealing(client, game) -> Coup:
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    assert post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco").status_code == 200
    assert post(client, game.session, "rien-ne-va-plus", coup=coup.pk).status_code == 200
    return coup


def test_a_card_from_a_page_the_coup_has_moved_on_from_is_refused(client_for, game):
    """Two tablets (or tabs) on one table both show "next card: to the punta". The first
    card goes to the punta; the second, from the older page, is refused rather than dealt to
    the banker, whom its croupier never saw coming."""
    client = client_for(game.capo)
    coup = _dealing(client, game)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'name="expect_cards" value="0"' in page
    first = post(client, game.session, "card", coup=coup.pk, rank="9", suit="D", expect_cards="0")
    assert first.status_code == 200 and "Card 9♦ entered, to the punta." in first.content.decode()
    stale = post(client, game.session, "card", coup=coup.pk, rank="8", suit="D", expect_cards="0")
    assert stale.status_code == 409 and "The coup has moved on" in stale.content.decode()
    coup.refresh_from_db()
    assert coup.cards == ["9D"]
    second = post(client, game.session, "card", coup=coup.pk, rank="8", suit="D", expect_cards="1")
    assert "Card 8♦ entered, to the banker." in second.content.decode()
    italian = client.post(
        f"/tablet/sessions/{game.session.pk}/card/",
        {"coup": coup.pk, "rank": "2", "suit": "S", "expect_cards": "1", "idempotency_key": str(uuid.uuid4())},
        headers={"Accept-Language": "it"},
    )
    assert italian.status_code == 409 and "Il colpo è andato avanti" in italian.content.decode()


def test_the_stop_card_offers_a_new_sabot_and_the_banker_stays(client_for, game):
    from tables.models import Bank, Shoe

    client = client_for(game.capo)
    shoe = Shoe.objects.filter(session=game.session).latest("pk")
    Shoe.objects.filter(pk=shoe.pk).update(stop_card_reached_at=shoe.loaded_at)  # (as the last coup's card did)
    banker = Bank.objects.get(session=game.session, status="active").banker_id
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "the stop card has appeared" in page and "Load a new sabot" in page and "Open the coup" not in page
    assert post(client, game.session, "shoe-load", number=shoe.number).status_code == 200
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Open the coup" in page and "Load a new sabot" not in page
    assert Bank.objects.get(session=game.session, status="active").banker_id == banker


def test_an_expired_session_sends_the_tablet_to_the_login_and_back(client, game):
    page = f"/tablet/sessions/{game.session.pk}/"
    response = client.post(
        f"{page}card/", {"rank": "9", "suit": "D"},
        headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{page}"},
    )  # fmt: skip
    assert response.status_code == 204
    assert response["HX-Redirect"] == f"/accounts/login/?next={page.replace('/', '%2F')}"


def test_an_actions_address_opened_as_a_page_is_the_tablet(client_for, game):
    response = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/card/")
    assert response.status_code == 302 and response["Location"] == f"/tablet/sessions/{game.session.pk}/"


def test_a_stale_csrf_token_says_reload_in_the_users_language(game):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(game.capo)
    page = f"/tablet/sessions/{game.session.pk}/"
    response = client.post(
        f"{page}coup-open/", {"idempotency_key": str(uuid.uuid4())},
        headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{page}", "Accept-Language": "it"},
    )  # fmt: skip
    assert response.status_code == 403 and response["HX-Retarget"] == "#main"
    html = response.content.decode()
    assert "Questa pagina non è aggiornata" in html and f'href="{page}"' in html and "<html" not in html
    assert not Coup.objects.filter(session=game.session).exists()


def test_a_relieved_capo_partita_is_told_who_runs_the_table(client_for, game):
    client = client_for(game.capo)
    relief = _relieve(game)
    relief.first_name, relief.last_name = "Marco", "Bon"
    relief.save()
    response = post(client, game.session, "coup-open")
    assert response.status_code == 403
    assert "Marco Bon runs this table now" in response.content.decode()


def test_a_reconstruction_decision_for_the_wrong_side_says_so(client_for, game):
    client = client_for(game.capo)
    coup = _dealing(client, game)
    Coup.objects.filter(pk=coup.pk).update(state=Coup.State.PENDING, needs={"decision": "banker"})
    wrong = post(client, game.session, "reconstruction-decide", coup=coup.pk, side="punta", draws="true")
    assert wrong.status_code == 400
    html = wrong.content.decode()
    assert "does not wait for this decision" in html and "The banker has no decision" not in html


def test_a_barred_player_is_offered_no_banco(client_for, game):
    client = client_for(game.capo)
    assert post(client, game.session, "bar", patron=game.seat(3).pk, reason="false draw").status_code == 200
    post(client, game.session, "coup-open")
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    rows = re.findall(r'<form[^>]*class="bet-row">(.*?)</form>', html, re.S)
    barred = [r for r in rows if f'name="patron" value="{game.seat(3).pk}"' in r]
    others = [r for r in rows if f'name="patron" value="{game.seat(3).pk}"' not in r]
    assert barred and 'value="banco"' not in barred[0] and 'value="half"' not in barred[0]
    assert all('value="banco"' in r for r in others)


def test_the_queues_words_and_settings_are_on_every_page(client_for, game, settings):
    """chemin.js takes its words from the page, in the user's language, with how many days
    the server keeps an entry's key and the server's time (an entry too old is held back)."""
    settings.IDEMPOTENCY_KEY_DAYS = 9
    client = client_for(game.capo)
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'data-keep-days="9"' in html and re.search(r'data-now="\d{10}"', html)
    assert f'data-user="{game.capo.pk}"' in html
    assert "NOT sent. It was made on {when}" in html and "Discard this entry" in html
    assert "has not reached the server yet" in html and "Log out anyway?" in html
    client.post("/i18n/setlang/", {"language": "it", "next": "/"})
    html = client.get("/tablet/").content.decode()
    assert "NON inviato. È stato fatto il {when}" in html and "Scarta questo inserimento" in html
    assert "non ha ancora raggiunto il server" in html and "non hanno ancora raggiunto il server" in html
    assert "Uscire comunque?" in html and "Log out anyway?" not in html
    assert "attendono di essere inviati dalle loro pagine" in html


def test_a_refused_tablet_page_still_names_its_queue(client_for, game):
    """The table's page names the queue (user:session), so chemin.js lists and sends the
    entries left on the tablet there: its Capo Partita's once the session closed (he reads
    it, read only), and a refused user's own (never another's)."""
    from floor import services as floor_services

    floor_services.table_session_close(session=game.session, by=game.commissario)
    response = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/")
    html = response.content.decode()
    assert response.status_code == 200 and f'data-queue="{game.capo.pk}:{game.session.pk}"' in html
    other = UserFactory(username="capo-elsewhere", roles=["capo_partita"])
    response = client_for(other).get(f"/tablet/sessions/{game.session.pk}/")
    html = response.content.decode()
    assert response.status_code == 403
    assert f'data-queue="{other.pk}:{game.session.pk}"' in html  # his own queue, never another's


def test_the_kind_of_each_bet_is_said_in_the_pages_language(client_for, game):
    # the list of bets showed the stored code ("individual", "avec_la_table") on Italian pages
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="half")
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(3).pk, quick="custom", amount="150")
    assert set(Bet.objects.values_list("kind", flat=True)) == {"avec_la_table", "individual"}
    html = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    bets = html[html.index("Puntate, in ordine") :]
    bets = bets[: bets.index("</table>")]
    assert "<td>individual</td>" not in bets and "avec_la_table" not in bets
    assert "<td>puntata individuale</td>" in bets and "<td>banco avec la table</td>" in bets
    english = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<td>individual bet</td>" in english


def _banco_played_wrongly(client, game, cards, third) -> str:
    """A banco by seat 2, the four cards, the punta drawing `third`, the banker standing:
    the violations block of the tablet's page afterwards (whitespace folded)."""
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco")
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    for card in (*cards, "draw", third):
        if card == "draw":
            post(client, game.session, "punta", coup=coup.pk, draws="true")
        else:
            post(client, game.session, "card", coup=coup.pk, rank=card[:-1], suit=card[-1])
    assert post(client, game.session, "banker-stand", coup=coup.pk).status_code == 200
    return _violations(client, game)


def _violations(client, game, language: str = "en") -> str:
    page = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    violation = page[page.index('class="violations"') :]
    return " ".join(violation[: violation.index("</div>")].split())


def test_a_violation_names_the_punta_third_card_as_the_pages_show_cards(client_for, game):
    # the README's coup: the violation said "punta's third card 2S", every other card is "2♠"
    client = client_for(game.capo)
    post(client, game.session, "regola", patron=game.banker.pk, declared="true")
    violation = _banco_played_wrongly(client, game, ("2H", "AS", "3C", "2D"), "2S")
    assert "third card 2S" not in violation
    assert "punta's third card <span" in violation and "2♠" in violation
    # the banker saw the punta's third card, never his two: his total is not his violation's
    assert "stood on 3 against the punta's third card" in violation
    assert "punta 5" not in violation


def test_a_punta_s_violation_says_only_what_he_knew_when_he_decided(client_for, game):
    """The punta decides on his two cards (RULES.md §2.5): his violation names his total, not
    the third card he then got nor the banker's total, which he could not know."""
    client = client_for(game.capo)
    # punta 6 (6H + KC), banker 2 (KS + 2D): the punta draws on 6, where he must stand
    _banco_played_wrongly(client, game, ("6H", "KS", "KC", "2D"), "5D")
    for language, said in (("en", "punta drew on 6 (punta, banco solo: stand)."),
                           ("it", "la punta ha tirato con 6 (punta, banco solo: stare).")):
        violation = _violations(client, game, language)
        assert said in violation, violation
        assert "5♦" not in violation and "banker" not in violation and "banchiere" not in violation


def test_once_the_bank_is_covered_the_quick_amounts_that_cannot_be_bet_are_not_offered(client_for, game):
    # a covered bank still offered "€ 0", "bank € 0" and "½ € 500", each refused when tapped
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'value="minimum"' in page and 'value="half"' in page and 'value="open"' in page
    # the rest of the bank as an individual bet: not "bank € X" (in Italian "banco € X", read as
    # the banco solo call beside it)
    italian = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert re.search(r'value="open"[^>]*>il resto €\xa0[^<]+</button>', italian)
    whole = str(game.bank.amount // 100)
    assert post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, amount=whole).status_code == 200
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'value="minimum"' not in page and 'value="half"' not in page and 'value="open"' not in page
    # nor banco solo (refused once bets are placed) or another amount (the bank is covered)
    assert 'value="banco"' not in page and 'value="custom"' not in page


def test_a_regola_marked_after_rien_ne_va_plus_says_it_applies_from_the_next_coup(client_for, game):
    """Each coup snapshots the marks at rien ne va plus (tables.services.marks): a player who
    declares the Regola once the cards are out is not protected in this coup. The Capo
    Partita must be told so, not left to believe the house protects him now."""
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=300_00)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    client = client_for(game.capo)
    response = post(client, game.session, "regola", patron=game.seat(2).pk, declared="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "from the next coup (coup 2)" in html


def test_a_regola_marked_while_betting_applies_to_this_coup(client_for, game):
    from tables import services

    services.coup_open(session=game.session, by=game.capo)
    response = post(client_for(game.capo), game.session, "regola", patron=game.seat(2).pk, declared="true")
    html = response.content.decode()
    assert response.status_code == 200 and "plays alla Regola." in html and "next coup" not in html


def test_a_punto_banco_tablet_offers_no_step_the_server_refuses(client_for, make_game):
    """Punto banco has a profile (odds, settlement) but no chemin de fer play: every step is
    profile_not_supported. The tablet of such a session must say so, not offer to load a
    sabot that is then refused, and leave the Capo Partita with no valid next action."""
    game = make_game("punto-banco", shoe=False, bank=None, seated=2, standing=0)
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "not chemin de fer" in html
    assert "shoe-load" not in html and "Load the sabot" not in html
    assert "/regola/" not in html and "/bar/" not in html and "/void/" not in html


def test_a_pending_reconstruction_shows_the_situation_the_decision_is_asked_in(client_for, game):
    """examples/coups.jsonl #5: the punta alla Regola stood on 4 and the banker drew a 9D.
    The replay gives the 9D to the punta and reaches a free cell of the banker (5 against a
    9) the coup never reached: the Capo Partita must ask the banker, so the tablet shows the
    reconstruction so far (punta 2H 2C 9D, banker KS 5D), not only the coup as played,
    where the 9D is the banker's."""
    from tables import services

    services.regola_mark(session=game.session, by=game.capo, patron=game.seat(2), declared=True)
    coup = services.coup_record(
        session=game.session, by=game.capo, cards=["2H", "KS", "2C", "5D", "9D"], punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}],
    )  # fmt: skip
    assert (coup.state, coup.needs) == ("pending", {"decision": "banker"})
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    so_far = re.search(r'<div class="hands reconstruction"[^>]*>(.*?)</div>\s*</div>', html, re.S)
    assert so_far, "the reconstruction so far is shown"
    text = re.sub(r"<[^>]+>", " ", so_far.group(1))
    assert re.search(r"2♥\s+2♣\s+9♦", text) and re.search(r"K♠\s+5♦", text) and "9♦ " not in text.split("K♠")[1]


def test_the_bets_table_names_the_kind_of_bet_in_the_users_language(client_for, game):
    """The bets list showed the stored codes ('individual', 'avec_la_table') as they are,
    untranslated on an Italian tablet."""
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), kind="avec_la_table")
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(3), amount=100_00)
    html = client_for(game.capo).get(
        f"/tablet/sessions/{game.session.pk}/", headers={"Accept-Language": "it"}
    ).content.decode()
    table = re.search(r"<table class=\"list\"><caption>[^<]*</caption>(.*?)</table>", html, re.S).group(1)
    assert "avec_la_table" not in table and ">individual<" not in table
    assert "banco avec la table" in table and "individuale" in table


def test_the_withdrawal_of_a_barred_callers_banco_sits_by_his_name(client_for, game):
    """Two players call banco; the first is barred since: the tablet offers to take his
    call back. The button must stay inside the 'Banco called by' line, by his name, and
    say whose call it withdraws (a form inside a <p> is pushed out of it by the browser,
    leaving a bare 'withdraw' under the line)."""
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(3))
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert '<p class="banner">Banco called by' not in html  # no form inside a paragraph
    line = re.search(r'<div class="banner calls">(.*?)</div>', html, re.S).group(1)
    assert "bet-withdraw" in line and game.seat(3).full_name in line
    button = re.search(r"<button type=\"submit\">(.*?)</button>", line, re.S).group(1)
    assert game.seat(2).full_name in button


def _rows(html: str) -> dict[str, str]:
    rows = re.findall(r'<form[^>]*class="bet-row">(.*?)</form>', html, re.S)
    return {re.search(r'name="patron" value="(\d+)"', r).group(1): r for r in rows}


def test_the_bet_rows_offer_no_bet_the_server_would_refuse(client_for, game):
    """Once banco avec la table is taken, no one else is offered ½; once banco is called,
    no one is offered an individual bet (the others may still call banco: the first in turn
    wins the call), and the caller is offered nothing more; once a bet is placed no one is
    offered banco solo, and the bettor is offered no second bet. Each of these buttons was
    shown and then refused by the server."""
    from tables import services

    client = client_for(game.capo)
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), kind="avec_la_table")
    rows = _rows(client.get(f"/tablet/sessions/{game.session.pk}/").content.decode())
    mine, other = rows[str(game.seat(2).pk)], rows[str(game.seat(3).pk)]
    assert 'value="half"' not in other and 'value="banco"' not in other and 'value="minimum"' in other
    assert 'value="minimum"' not in mine and 'value="custom"' not in mine

    services.coup_annul(coup=coup, by=game.capo, reason="test")
    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(3))
    rows = _rows(client.get(f"/tablet/sessions/{game.session.pk}/").content.decode())
    caller, other = rows[str(game.seat(3).pk)], rows[str(game.seat(4).pk)]
    assert 'value="banco"' in other
    assert not any(f'value="{q}"' in other for q in ("minimum", "half", "open", "custom"))
    assert 'value="banco"' not in caller


def test_chemmy_fi_offers_no_banco_to_the_player_who_lost_one_at_the_previous_coup(client_for, make_game):
    """chemmy-fi forbids a second consecutive banco by a player who lost one (RULES.md §2.2):
    his row offered Banco, and the tap was refused (banco_suivi_forbidden)."""
    from tables import services

    game = make_game("chemmy-fi")
    services.coup_record(
        session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
        banco=game.seat(2),
    )  # fmt: skip
    client = client_for(game.capo)
    assert post(client, game.session, "coup-open").status_code == 200
    rows = _rows(client.get(f"/tablet/sessions/{game.session.pk}/").content.decode())
    assert 'value="banco"' not in rows[str(game.seat(2).pk)]
    assert 'value="banco"' in rows[str(game.seat(3).pk)] and 'value="minimum"' in rows[str(game.seat(2).pk)]


def test_the_tablet_pages_are_never_taken_from_the_browser_cache(client_for, game):
    """The back button must not show a table as it was: the pages change with every post
    (htmx swaps them in place), so a copy from the browser's cache shows a coup already
    played as still to play, with forms whose keys were used."""
    client = client_for(game.capo)
    for url in ("/tablet/", f"/tablet/sessions/{game.session.pk}/"):
        response = client.get(url)
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"], url


def test_the_tablet_shows_the_table_maximum_with_the_minimum(client_for, game):
    """The Capo Partita opens banks and takes bancos within the limits: the tablet's header
    shows the maximum the Commissario set (and none while there is none)."""
    from floor import services as floor_services

    client = client_for(game.capo)
    url = f"/tablet/sessions/{game.session.pk}/"
    html = client.get(url).content.decode()
    assert "€\xa0100" in html and "maximum" not in re.sub(r"<[^>]+>", " ", html.split('id="result"')[0]).lower()
    floor_services.table_minimum_change(session=game.session, minimum=200_00, maximum=5000_00,
                                        reason="high rollers", by=game.commissario)  # fmt: skip
    head = client.get(url).content.decode().split('id="result"')[0]
    assert re.search(r"<dt>maximum</dt><dd>€\xa05\u202f000</dd>", head), head
    assert re.search(r"<dt>minimum</dt><dd>€\xa0200</dd>", head)


@pytest.mark.parametrize(
    ("options", "amount", "said"),
    [
        ({"seated": 4}, "100", "at least 6 seats"),
        ({"maximum": 500_00}, "600", "the table maximum, €\xa0500"),
        ({"minimum": 200_00}, "150", "the table minimum, €\xa0200"),
    ],
)
def test_a_refused_first_bank_says_the_figure_to_meet(client_for, make_game, options, amount, said):
    """The Capo Partita opening the first bank is told what the table needs, not only that
    it does not have it: how many seats start the game, the minimum, the maximum."""
    game = make_game("venezia", bank=None, **options)
    response = post(client_for(game.capo), game.session, "bank-open", patron=game.seat(1).pk, amount=amount)
    assert response.status_code in (400, 409)
    assert said in response.content.decode().replace("\u202f", " ")


def test_a_refused_first_bank_says_the_figure_in_italian(make_game, client):
    game = make_game("venezia", bank=None, seated=4)
    client.force_login(game.capo)
    data = {"idempotency_key": str(uuid.uuid4()), "patron": game.seat(1).pk, "amount": "100"}
    response = client.post(f"/tablet/sessions/{game.session.pk}/bank-open/", data, HTTP_ACCEPT_LANGUAGE="it")
    assert "Il gioco inizia quando sono occupati almeno 6 posti." in response.content.decode()


def test_amounts_have_the_page_s_decimal_mark(client_for, make_game):
    """An Italian page writes € 1 500,50 (the comma its croupiers read and type), an English
    one € 1 500.50; the thousands are grouped alike (a narrow space). The amount a form
    offers, in the page's language, is read back as typed."""
    game = make_game("venezia", bank=None, minimum=1500_50)
    client = client_for(game.capo)
    url = f"/tablet/sessions/{game.session.pk}/"
    italian = client.get(url, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert re.search(r"<dd>€\xa01\u202f500,50</dd>", italian), italian.split('id="result"')[0]
    offered = re.search(r'id="bank-amount" name="amount" type="text" inputmode="decimal" value="([^"]*)"', italian)
    assert offered.group(1) == "1\u202f500,50"
    english = client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert re.search(r"<dd>€\xa01\u202f500.50</dd>", english)
    data = {"idempotency_key": str(uuid.uuid4()), "patron": game.seat(1).pk, "amount": offered.group(1)}
    response = client.post(f"{url}bank-open/", data, HTTP_ACCEPT_LANGUAGE="it")
    assert response.status_code == 200, response.content.decode()
    game.session.refresh_from_db()
    assert game.session.banks.get().amount == 1500_50


@pytest.mark.parametrize(("profile", "said", "not_said"), [
    ("venezia", "(Regola advises: ", "usually"),
    ("classic", "(usually: draws)", "Regola"),
])  # fmt: skip
def test_the_free_cell_s_advice_is_the_regola_s_only_where_the_game_has_one(
    client_for, make_game, profile, said, not_said
):
    """The banker on 5 against a punta's third card 4: a free cell. At Venezia the tablet
    gives the Regola's advice; `classic` has no Regola, and its advice is the usual play."""
    from tables import services

    game = make_game(profile)
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=100_00)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    for card in ("2H", "KS", "3C", "5D"):
        services.card_deal(coup=coup, by=game.capo, card=card)
    services.punta_declare(coup=coup, by=game.capo, draws=True)
    services.card_deal(coup=coup, by=game.capo, card="4S")
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    hint = re.search(r"Rule in force.*?</p>", html, re.S).group(0)
    assert said in hint and not_said not in hint.split("—", 1)[1], hint


def test_a_banco_call_is_said_on_the_money_line_not_an_open_rest(client_for, game):
    """Once banco is called no other bet is taken (banco_called): the money line says so,
    rather than "covered € 0 · open € <the bank>", which read as room for more bets."""
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    url = f"/tablet/sessions/{game.session.pk}/"
    line = re.compile(r'<p class="money-line">(.*?)</p>', re.S)
    before = line.search(client_for(game.capo).get(url).content.decode()).group(1)
    assert "open" in before and "banco called" not in before
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))
    after = line.search(client_for(game.capo).get(url).content.decode()).group(1)
    assert "banco called: the whole bank against one player, no other bet" in after
    assert "covered" not in after and "open" not in after
    italian = line.search(client_for(game.capo).get(url, HTTP_ACCEPT_LANGUAGE="it").content.decode()).group(1)
    assert "banco chiamato" in italian


@pytest.mark.parametrize("profile", ["domestic", "chemmy-fi", "classic"])
def test_no_regola_column_where_the_profile_has_no_regola(client_for, make_game, profile):
    """RULES.md §3.2: only venezia lets a player declare the Regola. Elsewhere the players'
    table still had a "Regola" column, always empty and with nothing to tap, which reads as
    if the marks were missing."""
    game = make_game(profile)
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    head = re.search(r'<table class="list players" id="tablet-players">\s*<thead>(.*?)</thead>', html, re.S).group(1)
    assert "Regola" not in head and head.count("<th") == 3
    body = re.search(r'<table class="list players" id="tablet-players">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    assert all(row.count("<td") == 3 for row in re.findall(r"<tr.*?</tr>", body, re.S))


def test_the_regola_column_is_there_at_venezia(client_for, game):
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    head = re.search(r'<table class="list players" id="tablet-players">\s*<thead>(.*?)</thead>', html, re.S).group(1)
    assert "Regola" in head and head.count("<th") == 4


def test_a_card_the_sabot_cannot_hold_is_refused_by_name_and_not_entered(client_for, make_game):
    """Six A♠ voided from a six-deck sabot, then an A♠ tapped as dealt (RULES.md §1: no card
    comes out more times than there are decks): refused, and the refusal names the card, as
    the croupier taps cards one after another and must know which one was not entered."""
    game = make_game("domestic")
    client = client_for(game.capo)
    client.cookies["chemin_language"] = "it"
    for _ in range(6):
        assert post(client, game.session, "void", rank="A", suit="S", reason="vista").status_code == 200
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco")
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    r = post(client, game.session, "card", coup=coup.pk, rank="A", suit="S")
    assert r.status_code in (400, 409)
    assert "A♠: Questa carta è già uscita dal sabot tante volte quanti sono i mazzi" in r.content.decode()
    coup.refresh_from_db()
    assert coup.cards == []


def test_rien_ne_va_plus_with_only_a_barred_bettor_says_what_to_do_in_italian(client_for, make_game):
    """domestic: the only bettor covers the bank, then is barred (faux tirage): nobody may
    hold the cards, so rien ne va plus is refused. The refusal said "Nessuno scommettitore
    ..." (every other page says "puntatore") and not how to go on: another player bets, or
    the coup is annulled (the annul form is on the page)."""
    from tables import services

    game = make_game("domestic")
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(7), amount=game.bank.amount)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(7), reason="faux tirage")
    client = client_for(game.capo)
    client.cookies["chemin_language"] = "it"
    r = post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    html = r.content.decode()
    assert r.status_code in (400, 409)
    assert "Nessun puntatore può tenere le carte per la punta" in html and "si annulla il colpo" in html
    assert "scommettitore" not in html
    coup.refresh_from_db()
    assert coup.state == Coup.State.BETTING


@pytest.mark.parametrize(("side", "italian"), [("banker", "chiedere al banchiere."), ("punta", "chiedere alla punta.")])
def test_a_free_choice_of_the_reconstruction_names_whom_to_ask(client_for, game, side, italian):
    """The prompt said "...: chiedere al giocatore." with the side after it, in bold, as a
    stray word ("... giocatore. banchiere"): it names him in the sentence now."""
    client = client_for(game.capo)
    coup = _dealing(client, game)
    Coup.objects.filter(pk=coup.pk).update(state=Coup.State.PENDING, needs={"decision": side})
    client.cookies["chemin_language"] = "it"
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert f"non aveva raggiunto: {italian}</p>" in html
    assert "chiedere al giocatore." not in html


@pytest.mark.parametrize(("profile", "label"), [("domestic", "banchiere"), ("venezia", "banchiere, non dichiarato")])
def test_the_bankers_rule_says_not_declared_only_where_he_may_declare(client_for, make_game, profile, label):
    """The rule in force for the banker read "banchiere, non dichiarato" at a domestic table,
    where nobody declares the Regola (RULES.md §3.2): as if a mark were missing."""
    game = make_game(profile)
    client = client_for(game.capo)
    client.cookies["chemin_language"] = "it"
    coup = _dealing(client, game)
    for rank, suit in (("2", "S"), ("K", "H"), ("3", "C"), ("3", "D")):  # punta 5, banker 3
        post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit)
    html = post(client, game.session, "punta", coup=coup.pk, draws="false").content.decode()
    rule = re.search(r"<strong>Norma in vigore:</strong>(.*?)—", html, re.S).group(1).strip()
    assert rule == label


def test_at_a_chemmy_fi_table_the_sabot_form_takes_the_burned_card_shown_face_up(client_for, make_game):
    """chemmy-fi burns 7 cards after the shuffle, the top one turned face up (RULES.md §1):
    the tablet's sabot form takes that card (the shoe then counts it as out), or none ("not
    seen"). Elsewhere there is no such field."""
    from tables.models import Shoe

    game = make_game("chemmy-fi", shoe=False, bank=None)
    client = client_for(game.capo)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'name="burn_face_up"' in page and "The burned card shown face up (the top one of the 7)" in page
    number = game.session.shoe_number
    answer = post(client, game.session, "shoe-load", number=number, burn_face_up="QH")
    assert answer.status_code == 200 and f"Sabot {number} loaded; Q♥ burned face up." in answer.content.decode()
    shoe = Shoe.objects.get(session=game.session)
    assert shoe.state["burned"] == ["QH", None, None, None, None, None, None]
    # a card that is no card is refused, and nothing is loaded
    other = make_game("chemmy-fi", shoe=False, bank=None)
    refused = post(client_for(other.capo), other.session, "shoe-load", number=other.session.shoe_number,
                   burn_face_up="ZZ")  # fmt: skip
    assert 400 <= refused.status_code < 500 and not Shoe.objects.filter(session=other.session).exists()
    venezia = make_game("venezia", shoe=False, bank=None)
    page = client_for(venezia.capo).get(f"/tablet/sessions/{venezia.session.pk}/").content.decode()
    assert "Load the sabot" in page and 'name="burn_face_up"' not in page


def test_while_play_is_interrupted_the_next_coup_says_when_it_opens(client_for, game):
    """Interrupted between coups, the panel's "Next coup" is not an empty heading: it says the
    next coup opens once play resumes (the banner above says why it stopped); a reader of
    the table (the Commissario) is told no coup is in play."""
    from floor import services as floor_services

    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="power cut")
    page = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Next coup" in page and "The next coup opens once play resumes." in page
    floor_services.table_session_resume(session=game.session, by=game.commissario)
    page = client_for(game.commissario).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Next coup" in page and "No coup in play." in page
    page = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Open the coup" in page and "No coup in play." not in page


def test_before_the_sabot_is_loaded_a_reader_is_told_who_loads_it(client_for, make_game, commissario):
    """Before the sabot is loaded, the panel of a reader of the table (its changeur, serving or
    relieved, the Commissario) was an empty card headed "Load the sabot", as if he were to load
    it and could not see how: it says the Capo Partita loads it, in the page's language; the
    Capo Partita gets the form and not those words."""
    game = make_game("venezia", shoe=False, bank=None)
    tablet = f"/tablet/sessions/{game.session.pk}/"
    said = "The sabot is not loaded yet: the Capo Partita loads it."
    for reader in (game.session.changeur, commissario):
        page = client_for(reader).get(tablet).content.decode()
        assert "Load the sabot" in page and said in page and "shoe-load" not in page
    page = client_for(game.capo).get(tablet).content.decode()
    assert "shoe-load" in page and said not in page
    client = client_for(game.session.changeur)
    client.post("/i18n/setlang/", {"language": "it", "next": "/"})
    assert "Il sabot non è ancora caricato: lo carica il Capo Partita." in client.get(tablet).content.decode()


def test_the_banker_s_row_says_so_in_words_not_only_in_green(client_for, game):
    """The players' table marked the banker's row by its pale green only (WCAG 1.4.1): the
    row says "banker" too, in the page's language."""
    html = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    row = re.search(r'<tr class="banker-row">(.*?)</tr>', html, re.S).group(1)
    assert game.banker.full_name in row and re.search(r'<span class="badge">\s*banker\s*</span>', row)
    client = client_for(game.capo)
    client.post("/i18n/setlang/", {"language": "it", "next": "/"})
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    row = re.search(r'<tr class="banker-row">(.*?)</tr>', html, re.S).group(1)
    assert re.search(r'<span class="badge">\s*banchiere\s*</span>', row)


def test_the_regola_badge_says_its_meaning_without_a_pointer(client_for, game):
    """The "R" beside a player alla Regola explained itself in a title only: no hover on a
    tablet, and a screen reader said "R". The words are in the badge (visually hidden), the
    letter is for the eye."""
    from tables import services

    client = client_for(game.capo)
    for patron in (game.banker, game.seat(2)):
        assert post(client, game.session, "regola", patron=patron.pk, declared="true").status_code == 200
    services.coup_open(session=game.session, by=game.capo)
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    badges = re.findall(r'<abbr class="badge"[^>]*>(.*?)</abbr>', html, re.S)
    assert len(badges) == 2  # the banker in the facts, seat 2 in his bet row
    for inside in badges:
        assert '<span aria-hidden="true">R</span>' in inside
        assert '<span class="visually-hidden">plays alla Regola</span>' in inside


def _confirm_form(html: str) -> dict[str, str]:
    """The fields of the panel's confirmation of a large amount (hidden ones: it sends them back)."""
    form = re.search(r'<form[^>]*class="card confirm-large">(.*?)</form>', html, re.S)
    assert form, html
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(1)))


def test_a_bank_a_hundred_times_the_minimum_is_asked_again_before_it_opens(client_for, make_game):
    """No maximum: any bank is the house's to take (RULES.md §2.1), but € 30,000,000 at a
    € 1,000 table is a slip of the finger far likelier than a bank: the tablet asks again,
    writing nothing, and opens it only on the confirmed post (a new entry, a new key)."""
    from audit.models import AuditEvent
    from tables.models import Bank

    game = make_game("venezia", bank=None, minimum=1000_00)
    client = client_for(game.capo)
    before = AuditEvent.objects.count()
    key = str(uuid.uuid4())
    asked = post(client, game.session, "bank-open", key=key, patron=game.seat(1).pk, amount="30,000,000")
    html = asked.content.decode()
    assert asked.status_code == 409
    name = game.seat(1).full_name
    assert f"Open a bank of €\xa030\u202f000\u202f000.00 for {name}? That is 30\u202f000 times the minimum." in html
    assert 'class="outcome ask"' in html  # a question, not styled as a refusal
    # its stable code, by which the tablet's queue tells the question from a refusal (chemin.js)
    assert 'data-code="large_amount_unconfirmed"' in html
    assert not Bank.objects.filter(session=game.session).exists() and AuditEvent.objects.count() == before
    # the amount is kept in the form, and the confirmation carries it under a new key
    assert re.search(r'id="bank-amount" name="amount" type="text" inputmode="decimal" value="30,000,000"', html)
    fields = _confirm_form(html)
    assert fields["amount"] == "30,000,000" and fields["patron"] == str(game.seat(1).pk)
    assert fields["confirm_large"] == "yes" and fields["idempotency_key"] != key
    again = post(client, game.session, "bank-open", key=key, patron=game.seat(1).pk, amount="30,000,000")
    assert again.status_code == 409 and not Bank.objects.filter(session=game.session).exists()
    confirmed = client.post(f"/tablet/sessions/{game.session.pk}/bank-open/", fields)
    assert confirmed.status_code == 200, confirmed.content.decode()
    assert Bank.objects.get(session=game.session).amount == 30_000_000_00
    assert AuditEvent.objects.filter(action="bank.opened").count() == 1


def test_the_api_takes_a_bank_of_any_amount_at_a_table_with_no_maximum(api_client_for, make_game):
    """The confirmation is the page's: the API (a tablet's client, a script) is unchanged."""
    game = make_game("venezia", bank=None, minimum=1000_00)
    answer = api_client_for(game.capo).post(
        f"/api/sessions/{game.session.pk}/banks/", {"patron": game.seat(1).pk, "amount": 30_000_000_00}, format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )
    assert answer.status_code == 201, answer.content
    assert game.session.banks.get().amount == 30_000_000_00


def test_a_bank_below_a_hundred_times_the_minimum_opens_at_once(client_for, make_game):
    from tables.models import Bank

    game = make_game("venezia", bank=None, minimum=1000_00)
    opened = post(client_for(game.capo), game.session, "bank-open", patron=game.seat(1).pk, amount="99,999.99")
    assert opened.status_code == 200 and "confirm-large" not in opened.content.decode()
    assert Bank.objects.get(session=game.session).amount == 99_999_99


def test_a_typed_bid_a_hundred_times_the_minimum_is_asked_again_in_italian(client_for, game):
    from tables import services

    services.coup_record(session=game.session, by=game.capo, cards=["7H", "6S", "KH", "KD"], punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    succession = Succession.objects.get(session=game.session)
    for n in range(2, 9):
        services.offer_pass(succession=succession, by=game.capo, patron=game.seat(n))
    auction = services.auction_open(session=game.session, by=game.capo)
    client = client_for(game.capo)
    data = {"idempotency_key": str(uuid.uuid4()), "auction": auction.pk, "patron": game.seat(3).pk,
            "quick": "custom", "amount": "10.000"}  # fmt: skip
    url = f"/tablet/sessions/{game.session.pk}/auction-bid/"
    asked = client.post(url, data, HTTP_ACCEPT_LANGUAGE="it", HTTP_HX_REQUEST="true")
    html = asked.content.decode()
    name = game.seat(3).full_name
    assert asked.status_code == 409 and f"Offrire €\xa010\u202f000,00 per {name}? Sono 100 volte il minimo." in html
    assert "Sì, offri €\xa010\u202f000,00</button>" in html
    assert not auction.bids.exists()
    confirmed = client.post(url, _confirm_form(html), HTTP_ACCEPT_LANGUAGE="it", HTTP_HX_REQUEST="true")
    assert confirmed.status_code == 200 and auction.bids.get().amount == 10_000_00
    # measured against the best bid now: meeting a large bid confirmed before is no slip
    data.update(idempotency_key=str(uuid.uuid4()), patron=game.seat(4).pk, amount="12.000")
    outbid = client.post(url, data, HTTP_ACCEPT_LANGUAGE="it", HTTP_HX_REQUEST="true")
    assert outbid.status_code == 200 and auction.bids.count() == 2


def test_the_confirmation_says_the_amount_it_enters(client_for, make_game):
    """The question's button sends the figure first typed, whatever the form below holds by
    then: "Yes, open this bank" tapped after correcting 30,000,000 to 300,000 in the form opened
    the bank at 30,000,000. The button says the amount it enters."""
    game = make_game("venezia", bank=None, minimum=1000_00)
    asked = post(client_for(game.capo), game.session, "bank-open", patron=game.seat(1).pk, amount="30,000,000")
    html = asked.content.decode()
    button = re.search(r'<form[^>]*class="card confirm-large">.*?<button[^>]*>(.*?)</button>', html, re.S).group(1)
    assert button == "Yes, open the bank at €\xa030\u202f000\u202f000.00"


@pytest.mark.parametrize("with_key", [True, False])
def test_a_large_bank_the_rules_refuse_is_refused_not_asked_again(client_for, make_game, with_key):
    """The rules come first: a large bank for a player who is not at the first banker's seat
    was asked again, confirmed, and only then refused for its seat. It is refused at once for
    what is wrong; and one the rules take is asked again with nothing written, a post without a
    key (an old page) as well."""
    from audit.models import AuditEvent
    from tables.models import Bank

    game = make_game("venezia", bank=None, minimum=1000_00)
    client = client_for(game.capo)
    url = f"/tablet/sessions/{game.session.pk}/bank-open/"

    def send(patron):
        data = {"patron": patron.pk, "amount": "30,000,000"}
        if with_key:
            data["idempotency_key"] = str(uuid.uuid4())
        return client.post(url, data)

    before = AuditEvent.objects.count()
    refused = send(game.seat(3))
    html = refused.content.decode()
    assert refused.status_code == 400 and "The first bank goes to the player at seat 1" in html
    assert "confirm-large" not in html and 'class="outcome err"' in html
    assert 'data-code="large_amount_unconfirmed"' not in html  # (a refusal's own code: not the question)
    asked = send(game.seat(1))
    assert asked.status_code == 409 and "confirm-large" in asked.content.decode()
    assert 'data-code="large_amount_unconfirmed"' in asked.content.decode()
    assert not Bank.objects.filter(session=game.session).exists() and AuditEvent.objects.count() == before


def test_domestic_a_raise_a_hundred_times_the_bank_is_asked_again(client_for, make_game):
    """A raise types the bank's new total: two zeros too many make it a hundred times the bank,
    the same slip as a new bank's, asked again the same way; a raise below that is entered at once."""
    from audit.models import AuditEvent
    from tables import services
    from tables.models import Bank
    from tables.templatetags.chemin_ui import euros_exact

    game = make_game("domestic")
    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    bank = Bank.objects.get(pk=game.bank.pk)
    typed = bank.amount  # its cents read as euros: the bank with two zeros too many
    client = client_for(game.capo)
    asked = post(client, game.session, "bank-raise", bank=bank.pk, amount=str(typed))
    html = asked.content.decode()
    name = bank.banker.full_name
    assert asked.status_code == 409 and 'class="outcome ask"' in html
    assert escape(f"Raise {name}'s bank to €\xa0{euros_exact(typed * 100)}? That is 100 times the bank.") in html
    assert Bank.objects.get(pk=bank.pk).amount == bank.amount
    assert not AuditEvent.objects.filter(action="bank.raised").exists()
    assert re.search(rf'id="raise-amount" name="amount" type="text" inputmode="decimal" value="{typed}"', html)
    confirmed = client.post(f"/tablet/sessions/{game.session.pk}/bank-raise/", _confirm_form(html))
    assert confirmed.status_code == 200, confirmed.content.decode()
    assert Bank.objects.get(pk=bank.pk).amount == typed * 100
    assert AuditEvent.objects.filter(action="bank.raised").count() == 1
    # from there, a raise of less than a hundred times the bank is entered at once
    raised = post(client, game.session, "bank-raise", bank=bank.pk, amount=str(typed + 1))
    assert raised.status_code == 200 and Bank.objects.get(pk=bank.pk).amount == (typed + 1) * 100


def test_a_new_bank_taken_in_succession_is_asked_again_when_large(client_for, game):
    """The least an offer takes is the measure: a new bank's, the table minimum."""
    from tables import services

    services.coup_record(session=game.session, by=game.capo, cards=["7H", "6S", "KH", "KD"], punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    succession = Succession.objects.get(session=game.session)
    offer = succession.offers.get(status="pending", order=1)
    assert offer.round == "new_bank" and game.session.minimum == 100_00
    client = client_for(game.capo)
    asked = post(client, game.session, "offer-accept", succession=succession.pk, patron=offer.patron_id,
                 amount="10,000")  # fmt: skip
    html = asked.content.decode()
    assert asked.status_code == 409 and "That is 100 times the least this offer takes." in html
    assert not game.session.banks.filter(ended_at__isnull=True).exists()
    confirmed = client.post(f"/tablet/sessions/{game.session.pk}/offer-accept/", _confirm_form(html))
    assert confirmed.status_code == 200, confirmed.content.decode()
    assert game.session.banks.get(ended_at__isnull=True).amount == 10_000_00
