"""The Commissario annuls a coup whose cards have started but which is not settled
(tables.services.coup_annul): the recovery of a coup that cannot be played to its end, its
settlement refused by the books or its tablet lost mid-coup. No money moves, the bets go
back, the bank is as it was, the cards stay out of the shoe, the next coup opens, the session
closes, and the books still hold to the events."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from audit.models import AuditEvent
from floor import services as floor_services
from tables import services
from tables.models import Bank, Coup, Posting, Shoe, ShoeCard
from tables.selectors import session_game_state

from .test_books_as_played import as_played
from .test_coups import BANKER_WINS, PUNTA_NATURAL, PUNTA_WINS

pytestmark = pytest.mark.django_db


def _dealing(game, *cards: str, bets=((2, 300_00), (3, 200_00))) -> Coup:
    coup = services.coup_open(session=game.session, by=game.capo)
    for seat, amount in bets:
        services.bet_place(coup=coup, by=game.capo, patron=game.seat(seat), amount=amount)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    for card in cards:
        services.card_deal(coup=coup, by=game.capo, card=card)
    coup.refresh_from_db()
    return coup


def _shoe_out(game) -> tuple[int, list[str]]:
    shoe = Shoe.objects.get(session=game.session, finished_at__isnull=True)
    state = session_game_state(game.session)["shoe"]
    return state["cards_out"], list(ShoeCard.objects.filter(shoe=shoe).order_by("position").values_list("code", flat=True))


def _verify_ok() -> str:
    out = io.StringIO()
    call_command("audit_verify", "--workers", "1", stdout=out)
    assert "OK: every chain verifies." in out.getvalue(), out.getvalue()
    return out.getvalue()


def test_the_commissario_annuls_a_dealing_coup_no_money_moves_and_the_cards_stay_out(game):
    coup = _dealing(game, "KH", "5S", "3C")
    assert coup.state == Coup.State.DEALING
    bank_before = Bank.objects.filter(pk=game.bank.pk).values("status", "amount", "coups_completed").get()
    out_before = _shoe_out(game)
    assert out_before[0] == 3
    events = AuditEvent.objects.count()

    annulled = services.coup_annul(coup=coup, by=game.commissario, reason="tablet lost mid-coup")

    assert annulled.state == Coup.State.ANNULLED and annulled.annulled_by_id == game.commissario.pk
    assert annulled.annul_reason == "tablet lost mid-coup" and annulled.winner == ""
    row = Coup.objects.get(pk=coup.pk)
    assert (row.state, row.cards, row.cagnotte, row.settled_at) == ("annulled", ["KH", "5S", "3C"], 0, None)
    assert not Posting.objects.filter(session=game.session).exists()
    assert Bank.objects.filter(pk=game.bank.pk).values("status", "amount", "coups_completed").get() == bank_before
    # A drawn card never goes back (RULES.md §1): the shoe still counts them out.
    assert _shoe_out(game) == out_before
    assert list(ShoeCard.objects.filter(coup=coup).values_list("code", "use", "voided").order_by("position")) == [
        ("KH", "dealt", False), ("5S", "dealt", False), ("3C", "dealt", False)]  # fmt: skip
    event = AuditEvent.objects.get(action="coup.annulled")
    assert AuditEvent.objects.count() == events + 1 and event.actor_id == game.commissario.pk
    assert event.payload["was"] == "dealing" and event.payload["cards"] == ["KH", "5S", "3C"]
    assert event.payload["next_cards"] == [] and event.payload["reason"] == "tablet lost mid-coup"
    assert event.payload["bets_returned"] == [
        {"patron": game.seat(2).pk, "kind": "individual", "amount": 300_00},
        {"patron": game.seat(3).pk, "kind": "individual", "amount": 200_00},
    ]
    state = session_game_state(game.session)
    assert state["coup"] is None and state["last_coup"]["state"] == "annulled" and state["can_open_coup"]
    assert state["last_coup"]["cards"] == ["KH", "5S", "3C"] and state["balances"] == []

    # The next coup opens on the same bank and plays on from the shoe's next card.
    nxt = services.coup_record(
        session=game.session, by=game.capo, cards=PUNTA_WINS, punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 400_00}],
    )  # fmt: skip
    assert nxt.number == coup.number + 1 and nxt.bank_amount == 1000_00 and nxt.winner == "punta"
    assert _shoe_out(game)[1] == ["KH", "5S", "3C", *PUNTA_WINS]
    assert as_played(game.session) == []
    _verify_ok()


def test_the_commissario_annuls_a_pending_reconstruction(game):
    s, by = game.session, game.capo
    services.regola_mark(session=s, by=by, patron=game.banker, declared=True)
    # Banker alla Regola stood on 3 against a 2: the reconstruction waits for the shoe's next card.
    coup = services.coup_record(session=s, by=by, cards=["KH", "2S", "3C", "AS", "2D"], punta_draws=True,
                                banker_draws=False, bets=[{"patron": game.seat(2), "amount": 200_00}])  # fmt: skip
    assert coup.state == Coup.State.PENDING
    services.coup_annul(coup=coup, by=game.commissario, reason="the next card fell on the floor")
    event = AuditEvent.objects.get(action="coup.annulled")
    assert event.payload["was"] == "pending" and event.payload["cards"] == ["KH", "2S", "3C", "AS", "2D"]
    assert not Posting.objects.filter(session=s).exists()
    assert Bank.objects.get(pk=game.bank.pk).coups_completed == 0
    services.coup_record(session=s, by=by, cards=BANKER_WINS, punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    assert as_played(s) == []


def test_an_annulled_dealing_coup_lets_the_session_close_and_its_books_verify(game):
    coup = _dealing(game, "KH", "5S")
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="tablet lost")
    services.coup_annul(coup=coup, by=game.commissario, reason="tablet lost")
    floor_services.table_session_close(session=game.session, by=game.commissario)
    game.refresh()
    assert game.session.status == "closed"
    assert (game.bank.status, game.bank.end_reason, game.bank.amount) == ("ended", "session_closed", 1000_00)
    assert not Posting.objects.filter(session=game.session).exists()
    assert as_played(game.session) == []
    _verify_ok()


@pytest.mark.parametrize("who", ["capo", "changeur"])
def test_only_the_commissario_annuls_once_the_cards_have_started(game, refused, who):
    coup = _dealing(game, "KH")
    by = game.capo if who == "capo" else game.session.changeur
    err = refused("not_commissario", services.coup_annul, coup=coup, by=by, reason="let me")
    assert err.status_code == 403
    assert Coup.objects.get(pk=coup.pk).state == "dealing"


def test_the_commissario_needs_a_reason(game, refused):
    coup = _dealing(game, "KH")
    for reason in ("", "  ", None):
        err = refused("reason_required", services.coup_annul, coup=coup, by=game.commissario, reason=reason)
        assert err.status_code == 400


def test_before_the_cards_it_is_still_the_capo_partita_s(game, refused):
    coup = services.coup_open(session=game.session, by=game.capo)
    refused("not_session_capo_partita", services.coup_annul, coup=coup, by=game.commissario, reason="x")
    services.coup_annul(coup=coup, by=game.capo, reason="x")


@pytest.fixture
def books_refuse_postings():
    """A rule of the books the settlement breaks, for this test only (its transaction rolls
    it back): every posting is refused, as a future constraint might refuse a figure."""
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE tables_posting ADD CONSTRAINT test_books_refuse_postings CHECK (amount IS NULL) NOT VALID"
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE tables_posting DROP CONSTRAINT IF EXISTS test_books_refuse_postings")


def test_a_coup_whose_settlement_is_refused_is_annulled_by_the_commissario(game, refused, books_refuse_postings):
    coup = _dealing(game, *PUNTA_NATURAL[:3])
    # The punta's natural completes the coup at the 4th card; the books refuse its settlement:
    # the card rolls back with it, and entering it again is refused again.
    err = refused("settlement_refused", services.card_deal, coup=coup, by=game.capo, card=PUNTA_NATURAL[3])
    assert err.status_code == 409 and err.details["constraint"] == "test_books_refuse_postings"
    assert Coup.objects.get(pk=coup.pk).state == "dealing"
    refused("settlement_refused", services.card_deal, coup=coup, by=game.capo, card=PUNTA_NATURAL[3])
    # Stuck: the Capo Partita may neither finish nor annul it, nor the Commissario close the session.
    refused("not_commissario", services.coup_annul, coup=coup, by=game.capo, reason="stuck")
    refused("coup_in_progress", floor_services.table_session_close, session=game.session, by=game.commissario)

    services.coup_annul(coup=coup, by=game.commissario, reason="settlement refused by the books")
    assert AuditEvent.objects.get(action="coup.annulled").payload["cards"] == PUNTA_NATURAL[:3]
    assert not Posting.objects.filter(session=game.session).exists()
    assert _shoe_out(game)[0] == 3
    # The next coup opens (and is annulled before its cards by the Capo Partita: the books
    # still refuse any settlement); then the session closes.
    nxt = services.coup_open(session=game.session, by=game.capo)
    services.coup_annul(coup=nxt, by=game.capo, reason="closing the table")
    floor_services.table_session_close(session=game.session, by=game.commissario)
    game.refresh()
    assert game.session.status == "closed" and game.bank.amount == 1000_00
    assert as_played(game.session) == []
    _verify_ok()
