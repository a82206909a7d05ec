"""The coup services and the tablet's state run a constant number of queries, however
many bettors there are (2 vs 8) and however many coups were played."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tables import selectors, services

CARDS = ["KH", "5S", "3C", "2D", "2S"]  # banker wins: every bettor gets a posting


def count(fn, **kwargs) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn(**kwargs)
    return len(ctx.captured_queries)


BET_QUERIES = 8  # queries of one _bet_place step inside coup_record (measured in test_bet_place_is_constant)


def bettors(game, n):
    return [*game.seated[1:], *game.standing][:n]


def measure(make_game, n: int) -> dict[str, int]:
    game = make_game("venezia", standing=1)
    by = game.capo
    services.regola_mark(session=game.session, by=by, patron=game.seat(8), declared=True)
    services.faux_tirage_bar(session=game.session, by=by, patron=game.seat(7), reason="x")
    out = {}
    coup = services.coup_open(session=game.session, by=by)
    for patron in bettors(game, n):
        services.bet_place(coup=coup, by=by, patron=patron, amount=50_00)
    out["state_betting"] = count(selectors.session_game_state, session=game.session)
    out["rien_ne_va_plus"] = count(services.rien_ne_va_plus, coup=coup, by=by)
    for card in CARDS[:4]:
        services.card_deal(coup=coup, by=by, card=card)
    services.punta_declare(coup=coup, by=by, draws=True)
    services.card_deal(coup=coup, by=by, card=CARDS[4])
    out["state_dealing"] = count(selectors.session_game_state, session=game.session)
    out["banker_decide_and_settle"] = count(services.banker_decide, coup=coup, by=by, draws=False)
    # coup_record places each bet (a constant number of queries per bet, as bet_place);
    # everything else in it, the settlement included, is constant.
    out["coup_record_less_bets"] = (
        count(
            services.coup_record,
            session=game.session,
            by=by,
            cards=CARDS,
            punta_draws=True,
            bets=[{"patron": p, "amount": 50_00} for p in bettors(game, n)],
        )
        - n * BET_QUERIES
    )
    out["state_after"] = count(selectors.session_game_state, session=game.session)
    return out


def test_constant_queries_2_vs_8_bettors(make_game):
    two = measure(make_game, 2)
    eight = measure(make_game, 8)
    assert two == eight, (two, eight)
    assert eight["state_dealing"] <= 12


def test_bet_place_is_constant(game):
    by = game.capo
    coup = services.coup_open(session=game.session, by=by)
    first = count(services.bet_place, coup=coup, by=by, patron=game.seat(2), amount=10_00)
    for n in range(3, 8):
        services.bet_place(coup=coup, by=by, patron=game.seat(n), amount=10_00)
    last = count(services.bet_place, coup=coup, by=by, patron=game.seat(8), amount=10_00)
    assert first == last
    # bet_place = its savepoint (2), the coup's ids and the session, bank and coup locks (4),
    # and the step itself, which is what coup_record runs per bet.
    assert first - 2 - 4 == BET_QUERIES, first


def test_state_does_not_grow_with_coups(game):
    by = game.capo
    services.coup_record(
        session=game.session,
        by=by,
        cards=["7H", "7S", "KH", "KD"],
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 10_00}],
    )
    one = count(selectors.session_game_state, session=game.session)
    for _ in range(4):
        services.coup_record(
            session=game.session,
            by=by,
            cards=["7H", "7S", "KH", "KD"],
            punta_draws=False,
            bets=[{"patron": game.seat(3), "amount": 10_00}, {"patron": game.seat(4), "amount": 10_00}],
        )
    assert count(selectors.session_game_state, session=game.session) == one
