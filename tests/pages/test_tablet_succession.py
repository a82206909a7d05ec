"""Passing the bank and the asta on the Capo Partita's tablet (RULES.md §5), through
Django's test client: the succession panel after a loss or a withdrawal, accept and pass,
the asta with a tie between a seated and a standing bidder, refusals in the user's
language by code, a retried post entered once."""

from __future__ import annotations

import itertools
import re
import uuid

import pytest

from tables import services
from tables.models import Auction, Bank, Bid, Succession, SuccessionOffer
from tests.factories import UserFactory
from tests.pages.repeated_hour import MOMENTS

pytestmark = pytest.mark.django_db

BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands
PUNTA_WINS = ["7H", "6S", "KH", "KD"]  # punta 7 v banker 6, both stand -> punta


def post(client, session, action, key=None, **data):
    data["idempotency_key"] = key or str(uuid.uuid4())
    return client.post(f"/tablet/sessions/{session.pk}/{action}/", data)


def page(client, session) -> str:
    response = client.get(f"/tablet/sessions/{session.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def lose(game) -> Succession:
    """The banker (seat 1) loses a coup against seat 2: his bank passes."""
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    return Succession.objects.get(session=game.session)


def withdraw(game) -> Succession:
    """The banker wins a coup, then withdraws: the seguito all'altezza."""
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    game.bank.refresh_from_db()
    services.bank_withdraw(bank=game.bank, by=game.capo)
    return Succession.objects.get(session=game.session)


def rotation_said(html: str) -> str:
    return re.search(r'<div class="rotation"><dt>[^<]*</dt><dd>(.*?)</dd></div>', html).group(1)


def status_of(succ) -> list[str]:
    return list(
        SuccessionOffer.objects.filter(succession=succ).order_by("order").values_list("status", flat=True)
    )


def test_after_a_loss_the_panel_shows_the_offers_and_the_turn(client_for, game):
    succ = lose(game)
    html = page(client_for(game.capo), game.session)
    assert "Passing the bank" in html and "Open the bank" not in html
    assert f"{game.seat(1).full_name} lost the bank." in html
    assert "a new bank from the minimum" in html
    # The offers in order: seat 2 first (the next in rotation), every seated player, no standing one.
    rows = re.findall(r'<tr class="offer (\w+)( current)?">', html)
    assert len(rows) == SuccessionOffer.objects.filter(succession=succ).count() == 7
    assert rows[0] == ("pending", " current") and all(r == ("pending", "") for r in rows[1:])
    assert f"Accept: {game.seat(2).full_name}" in html and f"Pass: {game.seat(2).full_name}" in html
    assert f"Accept: {game.seat(3).full_name}" not in html
    # The amount is prefilled with the terms (from the table minimum) and editable.
    assert re.search(r'id="acc-1" name="amount" type="text" inputmode="decimal" value="100" required>', html)
    # The rotation on the header: seat 1's turn has just ended, the bank is offered to seat 2.
    assert rotation_said(html) == "passing from seat 1 · offered to seat 2"


def test_accept_and_pass_through_the_page(client_for, game):
    succ = lose(game)
    client = client_for(game.capo)
    r = post(client, game.session, "offer-pass", succession=succ.pk, patron=game.seat(2).pk)
    assert r.status_code == 200 and f"{game.seat(2).full_name} passes." in r.content.decode()
    html = r.content.decode()
    assert f"Accept: {game.seat(3).full_name}" in html
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=game.seat(3).pk, amount="250")
    html = r.content.decode()
    assert r.status_code == 200, html
    assert f"{game.seat(3).full_name} holds the bank: €\xa0250." in html
    bank = Bank.objects.get(session=game.session, status="active")
    assert bank.banker == game.seat(3) and bank.amount == 250_00 and bank.origin == "succession"
    assert status_of(succ)[:2] == ["passed", "accepted"] and set(status_of(succ)[2:]) == {"skipped"}
    # The normal coup flow resumes with the new bank.
    assert "Open the coup" in html and "Passing the bank" not in html
    assert "turn seat 3" in html


def test_withdrawal_altezza_all_pass_asta_tie_seated_wins(client_for, game):
    succ = withdraw(game)
    client = client_for(game.capo)
    html = page(client, game.session)
    assert f"{game.seat(1).full_name} withdrew." in html and "seguito all&#x27;altezza" in html
    amount = Bank.objects.get(pk=game.bank.pk).amount
    # All'altezza: the amount is the whole bank, not editable.
    assert re.search(
        rf'name="amount" type="text" inputmode="decimal" value="{amount // 100 if amount % 100 == 0 else amount / 100}" readonly required>',
        html,
    )
    # Asta not before the seated players have answered.
    assert "Open the asta" not in html
    for n in range(2, 9):
        r = post(client, game.session, "offer-pass", succession=succ.pk, patron=game.seat(n).pk)
        assert r.status_code == 200, r.content.decode()
    html = r.content.decode()
    # The standing player: first to speak.
    stander = game.standing[0]
    assert "First to speak takes the bank" in html and f"Accept: {stander.full_name}" in html
    r = post(client, game.session, "offer-pass", succession=succ.pk, patron=stander.pk)
    html = r.content.decode()
    assert "Nobody took the bank in turn" in html and "Open the asta" in html
    r = post(client, game.session, "auction-open")
    html = r.content.decode()
    assert r.status_code == 200 and "The asta is open" in html and "No bid yet." in html
    auction = Auction.objects.get(succession=succ)
    # The standing player bids first with the quick minimum, a seated player equals it.
    r = post(
        client,
        game.session,
        "auction-bid",
        auction=auction.pk,
        patron=stander.pk,
        quick="minimum",
        amount_minimum="100",
        amount_raise="",
    )
    assert r.status_code == 200, r.content.decode()
    r = post(
        client,
        game.session,
        "auction-bid",
        auction=auction.pk,
        patron=game.seat(5).pk,
        quick="custom",
        amount="100",
    )
    html = r.content.decode()
    assert "Bid 2:" in html
    # A bid refused says the figure it must meet (here the table minimum).
    for amount, said in (("90", "A bid is at least the table minimum, €\xa0100."),):
        refused = post(client, game.session, "auction-bid", auction=auction.pk, patron=game.seat(6).pk,
                       quick="custom", amount=amount)  # fmt: skip
        assert refused.status_code == 400 and said in refused.content.decode(), refused.content.decode()
    assert list(
        Bid.objects.filter(auction=auction).order_by("seq").values_list("patron_id", "amount", "standing")
    ) == [(stander.pk, 100_00, True), (game.seat(5).pk, 100_00, False)]
    assert "standing" in html and "seat 5" in html
    assert f"Close the asta: {game.seat(5).full_name} takes the bank" in html
    assert "best + minimum €\xa0200" in html
    r = post(client, game.session, "auction-close", auction=auction.pk)
    html = r.content.decode()
    assert r.status_code == 200, html
    assert f"The asta is closed: {game.seat(5).full_name} holds the bank, €\xa0100." in html
    bank = Bank.objects.get(session=game.session, status="active")
    assert bank.banker == game.seat(5) and bank.amount == 100_00 and bank.origin == "auction"
    assert "Open the coup" in html


def test_refusals_are_shown_by_code_and_write_nothing(client_for, game):
    succ = lose(game)
    client = client_for(game.capo)
    # Not his turn.
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=game.seat(4).pk, amount="100")
    assert r.status_code == 409
    assert "Another player has the right to the bank first." in r.content.decode()
    # Below the minimum.
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=game.seat(2).pk, amount="50")
    assert r.status_code in (400, 409) and "at least the table minimum" in r.content.decode()
    # No asta while the seated players have not answered.
    r = post(client, game.session, "auction-open")
    assert r.status_code == 409 and "every seated player answers first" in r.content.decode()
    assert not Auction.objects.exists() and set(status_of(succ)) == {"pending"}


def test_refusal_in_italian(client_for, game):
    succ = lose(game)
    client = client_for(game.capo)
    client.cookies["chemin_language"] = "it"
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=game.seat(4).pk, amount="100")
    html = r.content.decode()
    assert r.status_code == 409 and "Another player has the right" not in html
    assert "Passaggio del banco" in html


def test_a_retried_pass_is_entered_once(client_for, game):
    succ = lose(game)
    client = client_for(game.capo)
    key = str(uuid.uuid4())
    first = post(client, game.session, "offer-pass", key=key, succession=succ.pk, patron=game.seat(2).pk)
    again = post(client, game.session, "offer-pass", key=key, succession=succ.pk, patron=game.seat(2).pk)
    assert first.status_code == again.status_code == 200
    assert "already recorded" in again.content.decode()
    assert status_of(succ)[:3] == ["passed", "pending", "pending"]


def test_only_the_capo_answers_the_commissario_opens_and_closes_the_asta(client_for, game):
    succ = withdraw(game)
    for n in range(2, 9):
        services.offer_pass(succession=succ, by=game.capo, patron=game.seat(n))
    other = UserFactory(username="other_capo", roles=["capo_partita"])
    assert post(client_for(other), game.session, "auction-open").status_code == 403
    commissario = client_for(game.commissario)
    r = post(commissario, game.session, "offer-pass", succession=succ.pk, patron=game.standing[0].pk)
    assert r.status_code == 403
    html = page(commissario, game.session)
    assert "Open the asta" in html and "Pass:" not in html
    r = post(commissario, game.session, "auction-open")
    assert r.status_code == 200 and "The asta is open" in r.content.decode()
    auction = Auction.objects.get(succession=succ)
    assert (
        post(
            commissario, game.session, "auction-bid", auction=auction.pk, patron=game.seat(3).pk, amount="100"
        ).status_code
        == 403
    )
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=300_00)
    r = post(commissario, game.session, "auction-close", auction=auction.pk)
    assert r.status_code == 200 and f"{game.seat(3).full_name} holds the bank" in r.content.decode()
    assert Bank.objects.get(session=game.session, status="active").banker == game.seat(3)


def test_bids_made_in_the_repeated_hour_say_their_offset(client_for, make_game):
    """QA: on the October night the clock reads 02:00-02:59 twice: a bid at 02:30:15 CEST and
    one at 02:30:15 CET read alike in the asta's list. In that hour a bid's time carries its
    UTC offset; any other time reads as before."""
    game = make_game("venezia", standing=0)
    succ = lose(game)
    for n in range(2, 9):
        services.offer_pass(succession=succ, by=game.capo, patron=game.seat(n))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=300_00)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(4), amount=400_00)
    client = client_for(game.capo)
    for first, second in itertools.pairwise(MOMENTS):
        for seq, m in ((1, first), (2, second)):
            Bid.objects.filter(auction=auction, seq=seq).update(at=m.at)
        html = page(client, game.session)
        bids = html[html.index("<tbody>", html.index('<table class="list bids">')) :]
        times = re.findall(r"<td>([^<]*)</td></tr>", bids[: bids.index("</tbody>")])
        assert times == [first.second, second.second], times


def test_the_chemmy_claim_round_does_not_say_the_seated_have_all_answered(client_for, make_game):
    """chemmy-fi after a withdrawal: every player may claim an equal bank at once, and the
    asta may open while nobody has claimed it. The hint by the 'Open the asta' button must
    not tell the Capo Partita that the seated players have all answered when none has."""
    game = make_game("chemmy-fi")
    withdraw(game)
    html = page(client_for(game.capo), game.session)
    assert "Open the asta" in html
    assert "The seated players have all answered" not in html
    assert "Nobody has claimed the bank: opening the asta ends the claims." in html


def test_after_an_asta_without_bids_the_bank_form_proposes_the_next_seat_not_the_loser(client_for, make_game):
    """Nobody took the bank nor bid for it: the Capo Partita opens a new bank. The form's
    banker must default to the next seat in rotation (the header's 'next seat'), not to the
    first seat of the list, which here is the banker who has just lost it."""
    game = make_game("venezia", standing=0)
    succ = lose(game)
    for n in range(2, 9):
        services.offer_pass(succession=succ, by=game.capo, patron=game.seat(n))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_close(auction=auction, by=game.capo)
    html = page(client_for(game.capo), game.session)
    selected = re.search(r'<select id="bank-patron"[^>]*>(.*?)</select>', html, re.S).group(1)
    chosen = re.findall(r'<option value="(\d+)" selected>', selected)
    assert chosen == [str(game.seat(2).pk)]


def test_an_amount_outside_the_terms_is_refused_with_the_terms(client_for, make_game):
    """domestic, after a withdrawal: the bank is offered at no less than the continuation
    (2S, RULES.md §5). An amount under it was refused with "The bank is taken at the terms
    offered." alone, which does not tell the Capo Partita what the terms are: say them."""
    game = make_game("domestic")
    succ = withdraw(game)
    offer = SuccessionOffer.objects.filter(succession=succ).order_by("order").first()
    assert offer.amount_min == 200_00  # the continuation, 2S
    client = client_for(game.capo)
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=offer.patron.pk, amount="150")
    assert r.status_code in (400, 409)
    assert "The bank is taken at the terms offered: at least €\xa0200." in r.content.decode()
    client.cookies["chemin_language"] = "it"
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=offer.patron.pk, amount="150")
    assert "Il banco si prende alle condizioni offerte: almeno €\xa0200." in r.content.decode()
    assert set(status_of(succ)) == {"pending"} and not Bank.objects.filter(session=game.session, status="active")


def test_an_equal_bank_is_refused_with_its_exact_amount(client_for, make_game):
    game = make_game("chemmy-fi")
    succ = withdraw(game)
    offer = SuccessionOffer.objects.filter(succession=succ).order_by("order").first()
    r = post(client_for(game.capo), game.session, "offer-accept", succession=succ.pk, patron=offer.patron.pk, amount="150")
    html = r.content.decode()
    assert r.status_code in (400, 409) and "The bank is taken at the terms offered: exactly €\xa01" in html
    assert set(status_of(succ)) == {"pending"}


def test_the_chemmy_claim_round_says_the_nearest_claimant_takes_the_bank(client_for, make_game):
    """chemmy-fi after a withdrawal (RULES.md §5): whoever puts up an equal bank takes it,
    among several the nearest in turn. The panel said "First to speak takes the bank:",
    the standing players' all'altezza rule, over offers that each say "the nearest
    claimant": a croupier could give the bank to a farther player who spoke first."""
    game = make_game("chemmy-fi")
    withdraw(game)
    client = client_for(game.capo)
    html = page(client, game.session)
    assert "First to speak takes the bank" not in html
    assert "Whoever puts up an equal bank takes it; among several, the nearest in turn:" in html
    client.cookies["chemin_language"] = "it"
    html = page(client, game.session)
    assert "Il primo che parla prende il banco" not in html
    assert "fra più richiedenti, il più vicino nel giro" in html


def test_a_farther_chemmy_claim_is_said_as_a_claim_and_the_nearer_claimant_takes_the_bank(client_for, make_game):
    """chemmy-fi, equal bank: seat 4 claims while seats 2 and 3 have not answered. The
    tablet said "... accepts the bank." as if the bank were his; it is his only if no
    nearer player claims it (RULES.md §5), and here seat 3 does."""
    game = make_game("chemmy-fi")
    succ = withdraw(game)
    client = client_for(game.capo)
    client.cookies["chemin_language"] = "it"
    offers = {o.patron_id: o for o in SuccessionOffer.objects.filter(succession=succ)}
    height = offers[game.seat(4).pk].amount_min
    r = post(client, game.session, "offer-accept", succession=succ.pk, patron=game.seat(4).pk, amount=str(height // 100))
    html = r.content.decode()
    assert r.status_code == 200, html
    assert f"{game.seat(4).full_name} reclama il banco: è suo, a meno che lo reclami anche un giocatore più vicino." in html
    assert not Bank.objects.filter(session=game.session, status="active").exists()
    post(client, game.session, "offer-accept", succession=succ.pk, patron=game.seat(3).pk, amount=str(height // 100))
    assert not Bank.objects.filter(session=game.session, status="active").exists()  # seat 2 has not answered
    r = post(client, game.session, "offer-pass", succession=succ.pk, patron=game.seat(2).pk)
    assert f"{game.seat(3).full_name} tiene il banco" in r.content.decode()
    assert Bank.objects.get(session=game.session, status="active").banker == game.seat(3)


def test_a_refused_bid_names_the_figure_it_must_meet():
    from tables.views_tablet import _succession_refusal

    assert _succession_refusal("bid_below_best", {"best": 250_00}) == "A bid is at least the best bid so far, €\xa0250."
    assert _succession_refusal("bid_above_maximum", {"maximum": 500_00}) == "A bid is at most the table maximum, €\xa0500."
    assert _succession_refusal("bid_below_minimum", {"minimum": 100_00}) == "A bid is at least the table minimum, €\xa0100."
    assert _succession_refusal("bid_below_best", {}) == "A bid is at least the best bid so far."  # no figure given


def _terms(html: str) -> dict[int, tuple[str, str]]:
    """The offers' table: {order: (status, terms as the cell says them)} (thousands: a narrow
    no-break space)."""
    rows = re.findall(
        r'<tr class="offer (\w+)[^"]*">\s*<td>(\d+)</td>\s*<td>[^<]*</td>\s*<td>[^<]*</td>\s*<td>([^<]*)</td>', html
    )
    return {int(order): (status, terms) for status, order, terms in rows}


def _between(low: str, high: str) -> str:
    return f"€\xa0{low}\u2013{high}"  # (an en dash)


def test_an_answered_offer_shows_the_terms_it_was_answered_under(client_for, make_game):
    """A QA walk: the panel showed every new-bank offer on today's minimum and maximum, an
    offer passed under 100-5000 included once the Commissario had made them 200-4000; the
    game state keeps the terms it was answered under. Waiting, an offer shows those in force;
    answered, those it keeps. One answered before offers kept their maximum has none stored:
    its minimum alone, nothing said of a maximum (not today's)."""
    from floor import services as floor_services

    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2, maximum=5000_00)
    succ = lose(game)
    client = client_for(game.capo)
    post(client, game.session, "offer-pass", succession=succ.pk, patron=game.seat(2).pk)
    laid_out, today = _between("100", "5\u202f000"), _between("200", "4\u202f000")
    assert _terms(page(client, game.session)) == {
        1: ("passed", laid_out), 2: ("pending", laid_out), 3: ("pending", laid_out)}  # fmt: skip
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=200_00, maximum=4000_00, reason="the house"
    )
    html = page(client, game.session)
    assert _terms(html) == {1: ("passed", laid_out), 2: ("pending", today), 3: ("pending", today)}
    assert "Bank (euros), €\xa0200 to €\xa04\u202f000" in html  # the form of the offer in turn: today's
    # As an older version left it: no maximum stored on the answered offer.
    SuccessionOffer.objects.filter(succession=succ, order=1).update(amount_max=None)
    assert _terms(page(client, game.session))[1] == ("passed", "≥ €\xa0100")


def test_the_header_s_rotation_follows_the_bank_offered_after_a_loss(client_for, make_game):
    """RULES.md §5: after a loss the bank is offered to the next player in rotation (venezia:
    increasing seats), each accepting or passing. The header said "turn seat 1 · next seat 2"
    right after the banker at seat 1 lost it (seat 1's turn had just ended), and still "next
    seat 2" once seat 2 had passed and the bank was offered to seat 3."""
    game = make_game("venezia", standing=0)
    succ = lose(game)
    client = client_for(game.capo)
    html = page(client, game.session)
    assert rotation_said(html) == "passing from seat 1 · offered to seat 2"
    assert "turn seat 1" not in html
    italian = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert rotation_said(italian) == "passa dal posto 1 · offerto al posto 2"
    services.offer_pass(succession=succ, by=game.capo, patron=game.seat(2))
    html = page(client, game.session)
    assert rotation_said(html) == "passing from seat 1 · offered to seat 3"
    assert f"Accept: {game.seat(3).full_name}" in html
    for n in range(3, 9):
        services.offer_pass(succession=succ, by=game.capo, patron=game.seat(n))
    # Nobody took it: the asta is for the flow section to say, the header names no seat.
    assert rotation_said(page(client, game.session)) == "passing from seat 1"
    services.auction_close(auction=services.auction_open(session=game.session, by=game.capo), by=game.capo)
    # Lapsed: the bank's form proposes the next seat, and the header says it.
    assert rotation_said(page(client, game.session)) == "passing from seat 1 · next seat 2"
    services.bank_open(session=game.session, by=game.capo, patron=game.seat(2), amount=100_00)
    assert rotation_said(page(client, game.session)) == "turn seat 2 · next seat 3"
