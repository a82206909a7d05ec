"""The tablet's words as a Capo Partita reads them, in English and Italian: the bet button that
said "Punta" (the player holding the cards), the balances as money, who is offered the first
bank after others passed, what the all'altezza figure is, what each withdrawal did, the number
proposed for a new sabot, and where to void a card seen face up or dropped."""

from __future__ import annotations

import re
import uuid

import pytest

from tables import services
from tables.models import Coup, Shoe

pytestmark = pytest.mark.django_db


def post(client, session, action, **data):
    data["idempotency_key"] = str(uuid.uuid4())
    return client.post(f"/tablet/sessions/{session.pk}/{action}/", data)


def page(client, game, lang="en") -> str:
    client.cookies["chemin_language"] = lang
    return client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()


def players(html: str) -> str:
    table = html[html.index('id="tablet-players"') :]
    return table[: table.index("</table>")]


def test_the_italian_bet_button_says_it_records_the_bet(client_for, game):
    """"Punta" read as "la punta", the player holding the cards, next to each bettor's name."""
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    html = page(client, game, "it")
    buttons = re.findall(r'<button type="submit" name="quick" value="custom">(.*?)</button>', html)
    assert buttons and set(buttons) == {"Registra la puntata"}
    assert set(re.findall(r'<button type="submit" name="quick" value="custom">(.*?)</button>', page(client, game))) == {
        "Bet"
    }


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_players_balances_read_as_money(client_for, game, lang):
    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    cells = re.findall(r'<td class="num">(.*?)</td>', players(page(client_for(game.capo), game, lang)))
    assert "€\xa0+285" in cells and "€\xa0-300" in cells and "€\xa00" in cells
    assert all(c.startswith("€\xa0") for c in cells), cells


@pytest.mark.parametrize(
    ("lang", "offered", "passed"),
    [
        ("en", "The first bank is offered now to seat 3: {name}.", "Declined it (passe), in turn: seat 1 · {one}, seat 2 · {two}."),
        ("it", "Il primo banco è offerto ora al posto 3: {name}.",
         "Vi hanno rinunciato (passe), nell'ordine: posto 1 · {one}, posto 2 · {two}."),
    ],
)  # fmt: skip
def test_after_seats_pass_the_first_bank_the_tablet_says_who_has_it_now_and_who_passed(
    client_for, make_game, lang, offered, passed
):
    """It read "The first bank goes to the player at seat 3 (seat 1 when taken, else the next
    occupied seat...)" with seat 1 taken: it did not say that seats 1 and 2 had passed."""
    game = make_game("venezia", bank=None)
    client = client_for(game.capo)
    for n in (1, 2):
        assert post(client, game.session, "first-bank-pass", patron=game.seat(n).pk).status_code == 200
    html = page(client, game, lang)
    one, two, three = (game.seat(n).full_name for n in (1, 2, 3))
    assert offered.format(name=three) in html and passed.format(one=one, two=two) in html
    assert "seat 1 when taken" not in html and "il posto 1 se occupato" not in html
    # one pass: said in the singular
    game2 = make_game("venezia", bank=None)
    other = client_for(game2.capo)
    assert post(other, game2.session, "first-bank-pass", patron=game2.seat(1).pk).status_code == 200
    html = page(other, game2, lang)
    single = "Declined it (passe): seat 1 · " if lang == "en" else "Vi ha rinunciato (passe): posto 1 · "
    assert single + game2.seat(1).full_name + "." in html


@pytest.mark.parametrize(
    ("lang", "label"),
    [("en", "All'altezza: the whole current bank, €\xa0{amount} (fixed)"),
     ("it", "All'altezza: tutto il banco attuale, €\xa0{amount} (importo fisso)")],
)  # fmt: skip
def test_the_all_altezza_offer_says_what_its_figure_is(client_for, game, lang, label):
    """It read "Bank (euros), at the terms" over a figure the Capo Partita cannot change."""
    from tables.models import Bank

    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    bank = Bank.objects.get(pk=game.bank.pk)
    services.bank_withdraw(bank=bank, by=game.capo)
    html = page(client_for(game.capo), game, lang)
    assert label.format(amount=f"{bank.amount // 100:,}".replace(",", "\u202f")) in html.replace("&#x27;", "'")
    assert "at the terms" not in html and "alle condizioni offerte" not in html


def test_the_banker_s_withdrawal_says_dare_seguito_and_the_barred_banker_s_says_why(client_for, make_game):
    game = make_game("venezia")
    client = client_for(game.capo)
    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    answer = post(client, game.session, "bank-withdraw", bank=game.bank.pk).content.decode()
    assert f"{game.seat(1).full_name} withdrew (dare seguito), taking the bank: it passes." in answer
    barred = make_game("venezia")
    services.faux_tirage_bar(session=barred.session, by=barred.capo, patron=barred.seat(1), reason="faux tirage")
    other = client_for(barred.capo)
    html = page(other, barred)
    assert "The barred banker's bank ends: he takes it back" in html and "dare seguito" not in html
    answer = post(other, barred.session, "bank-withdraw", bank=barred.bank.pk).content.decode()
    assert f"{barred.seat(1).full_name} is barred from holding the cards: his bank ends" in answer


def test_a_carried_bet_taken_back_is_said_as_such(replay_after_tie):
    game, client = replay_after_tie
    replay = Coup.objects.filter(session=game.session).order_by("-number").first()
    html = page(client, game)
    assert "Take back the carried bet" in html
    answer = post(client, game.session, "bet-withdraw", coup=replay.pk, patron=game.seat(2).pk).content.decode()
    assert f"{game.seat(2).full_name} takes back the bet carried from the tie." in answer
    assert "takes his bet back" not in answer


def test_a_barred_player_s_banco_call_withdrawn_is_said_as_such(client_for, game):
    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    client = client_for(game.capo)
    assert "Withdraw the banco call: barred" in page(client, game)
    assert "Ritira la chiamata di banco: escluso" in page(client, game, "it")
    answer = post(client, game.session, "bet-withdraw", coup=coup.pk, patron=game.seat(2).pk).content.decode()
    assert "La chiamata di banco di " + game.seat(2).full_name + " è ritirata" in answer


def test_a_new_sabot_proposes_the_next_number(client_for, game):
    """The form for the sabot after the stop card proposed the finished one's number."""
    shoe = Shoe.objects.filter(session=game.session).latest("pk")
    Shoe.objects.filter(pk=shoe.pk).update(stop_card_reached_at=shoe.loaded_at)
    html = page(client_for(game.capo), game)
    assert shoe.number == "S-1" and 'id="shoe-number" name="number" type="text" value="S-2"' in html


@pytest.mark.parametrize(
    ("number", "following"),
    [("S-101", "S-102"), ("S-009", "S-010"), ("S-99", "S-100"), ("7", "8"), ("12B", "13B"), ("sabot", "")],
)
def test_next_shoe_number(number, following):
    from tables.views_tablet import next_shoe_number

    assert next_shoe_number(number) == following


def test_while_the_cards_are_dealt_the_void_tool_is_named_by_the_picker_and_says_what_it_is_for(client_for, game):
    """The only void on the tablet (services.card_void) takes a card seen face up or dropped
    out of the sabot; it sat closed at the foot of the side column, and said nothing of a card
    entered by mistake, which it does not take back."""
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco")
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    html = page(client, game)
    flow = html[html.index('id="flow"') : html.index('<aside class="side"')]
    assert '<a class="button-link" href="#void-card-help">A card seen face up or dropped? Void it (to the sibilla)</a>' in flow
    tool = html[html.index('<details class="tool" id="void-card">') :]
    tool = tool[: tool.index("</details>")]
    assert 'id="void-card-help"' in tool and "Not for a card entered by mistake" in tool
    assert "Una carta vista scoperta o caduta? Annullala (nella sibilla)" in page(client, game, "it")


def test_the_italian_rule_in_force_is_not_the_regola(client_for, game):
    """"Regola in vigore" over a banker not declared alla Regola read as if the Regola bound
    him; and "punta libero" gave the punta the wrong gender."""
    client = client_for(game.capo)
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, amount="300")
    post(client, game.session, "rien-ne-va-plus", coup=coup.pk)
    for rank, suit in (("2", "S"), ("K", "H"), ("3", "C"), ("3", "D")):  # punta 5: free
        post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit)
    html = page(client, game, "it")
    assert "<strong>Norma in vigore:</strong>" in html and "Regola in vigore" not in html
    assert re.search(r"— punta <strong class=\"cell free\">sceglie</strong>", html)
