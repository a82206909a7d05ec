"""Hypothesis: random sequences of legal and illegal actions at a table. Every action either
succeeds or is refused with a code and writes nothing; after every step the books balance."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Sum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.errors import ApplicationError
from tables import services
from tables.engine import ALL_CARDS
from tables.models import Bank, Coup, Posting
from tests.tables.conftest import snapshot

ACTIONS = st.one_of(
    st.tuples(st.just("open")),
    st.tuples(st.just("bet"), st.integers(0, 8), st.sampled_from([0, 10_00, 100_00, 333_33, 900_00])),
    st.tuples(st.just("avec"), st.integers(0, 8)),
    st.tuples(st.just("banco"), st.integers(0, 8)),
    st.tuples(st.just("rnvp")),
    st.tuples(st.just("card"), st.sampled_from([*ALL_CARDS, "ZZ"])),
    st.tuples(st.just("declare"), st.booleans()),
    st.tuples(st.just("decide"), st.booleans()),
    st.tuples(st.just("rcard"), st.sampled_from(ALL_CARDS)),
    st.tuples(st.just("rdecide"), st.sampled_from(["punta", "banker"]), st.booleans()),
    st.tuples(st.just("withdraw")),
    st.tuples(st.just("bank"), st.integers(0, 8), st.sampled_from([50_00, 100_00, 250_00])),
    st.tuples(st.just("regola"), st.integers(0, 8), st.booleans()),
    st.tuples(st.just("bar"), st.integers(0, 8)),
)


def _run(game, action) -> None:
    s, by = game.session, game.capo
    players = [*game.seated, *game.standing]
    coup = Coup.objects.filter(session=s).order_by("-number").first()
    bank = Bank.objects.filter(session=s).order_by("-number").first()
    kind, *args = action
    if kind == "open":
        services.coup_open(session=s, by=by)
    elif kind == "bank":
        services.bank_open(session=s, by=by, patron=players[args[0]], amount=args[1])
    elif kind == "withdraw":
        services.bank_withdraw(bank=bank, by=by)
    elif kind == "regola":
        services.regola_mark(session=s, by=by, patron=players[args[0]], declared=args[1])
    elif kind == "bar":
        services.faux_tirage_bar(session=s, by=by, patron=players[args[0]], reason="faux tirage")
    elif coup is None:
        return
    elif kind == "bet":
        services.bet_place(coup=coup, by=by, patron=players[args[0]], amount=args[1])
    elif kind == "avec":
        services.bet_place(coup=coup, by=by, patron=players[args[0]], kind="avec_la_table")
    elif kind == "banco":
        services.banco_call(coup=coup, by=by, patron=players[args[0]])
    elif kind == "rnvp":
        services.rien_ne_va_plus(coup=coup, by=by)
    elif kind == "card":
        services.card_deal(coup=coup, by=by, card=args[0])
    elif kind == "declare":
        services.punta_declare(coup=coup, by=by, draws=args[0])
    elif kind == "decide":
        services.banker_decide(coup=coup, by=by, draws=args[0])
    elif kind == "rcard":
        services.reconstruction_card(coup=coup, by=by, card=args[0])
    elif kind == "rdecide":
        services.reconstruction_decide(coup=coup, by=by, side=args[0], draws=args[1])


def _check_books(game) -> None:
    s = game.session
    for coup in Coup.objects.filter(session=s):
        total = Posting.objects.filter(coup=coup).aggregate(t=Sum("amount"))["t"]
        if coup.state == Coup.State.SETTLED:
            assert total == 0
        else:
            assert total is None
        assert coup.covered <= coup.bank_amount
    assert Coup.objects.filter(session=s).exclude(state="settled").count() <= 1
    assert Bank.objects.filter(session=s, status="active").count() <= 1
    for bank in Bank.objects.filter(session=s):
        banker = Posting.objects.filter(coup__bank=bank, role="banker").aggregate(t=Sum("amount"))["t"] or 0
        assert bank.amount + bank.reserve_returned == bank.initial_amount + banker


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(ACTIONS, min_size=5, max_size=30))
def test_random_actions_keep_the_books(game, actions):
    with transaction.atomic():
        for action in actions:
            before = snapshot()
            try:
                _run(game, action)
            except ApplicationError as exc:
                assert exc.code and snapshot() == before, (action, exc.code)
            _check_books(game)
        transaction.set_rollback(True)  # the next example starts from the same table
