"""The coup services and the tablet's state run a constant number of queries, however
many bettors there are (2 vs 8) and however many coups were played."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from config import prepared
from tables import selectors, services

CARDS = ["KH", "5S", "3C", "2D", "2S"]  # banker wins: every bettor gets a posting


def count(fn, **kwargs) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn(**kwargs)
    return len(ctx.captured_queries)


# Queries per bet inside coup_record: none, its bets are checked in memory and written in one
# INSERT (tests/tables/api/test_queries.py subtracts n * BET_QUERIES from the one-shot).
BET_QUERIES = 0
# Queries of one bet_place step (its place, the banco calls, the bets, the INSERT, the audit
# batch: the head's lock, then the events and the head in one round trip), measured in
# test_bet_place_is_constant.
BET_PLACE_QUERIES = 6
# A one-shot coup with 4 cards and its settlement, whatever the number of bettors: the
# session; then in one round trip (config.prepared.read) the bank, shoe, previous coup,
# places, bars, Regola marks and the audit stream's head (locked); the coup INSERT, the bets
# INSERT; then in one round trip each (config.prepared.write_rows) the shoe's cards and state
# with the postings, bank and coup, and the audit events and head; and the savepoint (2). It
# ran 82 queries with 2 bettors (130 with 8) before the writes were batched, 21 before they
# shared round trips, 15 before the reads did, 9 before the shoe's writes joined the
# settlement's.
RECORD_QUERIES = 8
# Statements sent one by one, not in one round trip, under server-side binding or on SQLite:
# 5 writes and 6 reads.
RECORD_ONE_BY_ONE = 11
# The tablet's game state, read fresh: the session, last bank, shoe, last coup with its bets
# and banco calls, places, marks, bars, balances and the players' names, in one round trip
# (11 statements).
STATE_QUERIES = 1
STATE_ONE_BY_ONE = 10


def _one_by_one(extra: int) -> int:
    """The statements config.prepared sends as one text on PostgreSQL with client-side
    binding (the default), counted one by one otherwise (a pipeline under server-side
    binding, each statement alone on SQLite)."""
    return 0 if prepared._joined(connection) else extra


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
    for state in ("state_betting", "state_dealing", "state_after"):
        assert eight[state] == STATE_QUERIES + _one_by_one(STATE_ONE_BY_ONE), (state, eight)


def test_bet_place_is_constant(game):
    by = game.capo
    coup = services.coup_open(session=game.session, by=by)
    first = count(services.bet_place, coup=coup, by=by, patron=game.seat(2), amount=10_00)
    for n in range(3, 8):
        services.bet_place(coup=coup, by=by, patron=game.seat(n), amount=10_00)
    last = count(services.bet_place, coup=coup, by=by, patron=game.seat(8), amount=10_00)
    assert first == last
    # bet_place = its savepoint (2), the session, bank and coup locks (3: the coup given
    # carries its session and bank ids), and the step itself.
    assert first - 2 - 3 == BET_PLACE_QUERIES + _one_by_one(1), first


def one_shot(make_game, n: int) -> int:
    game = make_game("venezia", standing=1)
    services.regola_mark(session=game.session, by=game.capo, patron=game.seat(8), declared=True)
    return count(
        services.coup_record,
        session=game.session,
        by=game.capo,
        cards=["6H", "7S", "KH", "KS"],  # punta 6 stands, banker 7 stands: the banker wins
        punta_draws=False,
        bets=[{"patron": p, "amount": 50_00} for p in bettors(game, n)],
    )


def test_one_shot_coup_query_budget(make_game):
    """A 4-card one-shot coup with 2 bets, settled, in at most RECORD_QUERIES queries (the
    audit events in one batch, the coup and the shoe written once each before the
    settlement), and no more with 8 bettors."""
    two, eight = one_shot(make_game, 2), one_shot(make_game, 8)
    assert two == RECORD_QUERIES + _one_by_one(RECORD_ONE_BY_ONE), two
    assert eight == two


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


def test_a_session_the_view_locked_is_not_read_again(game):
    """The API's view locks the session row (services.locked_session) and hands it to the
    service, which then does not lock it a second time; a session locked in another
    transaction, or outside a savepoint, is read again."""
    from django.db import transaction

    def session_reads(ctx) -> int:
        return sum('FROM "floor_tablesession"' in q["sql"] for q in ctx.captured_queries)

    with transaction.atomic(), transaction.atomic():  # as the idempotent request: a savepoint
        locked = services.locked_session(game.session.pk)
        with CaptureQueriesContext(connection) as ctx:
            services.regola_mark(session=locked, by=game.capo, patron=game.seat(3), declared=True)
        assert session_reads(ctx) == 0
    with transaction.atomic(), transaction.atomic():  # another transaction: the mark is stale
        with CaptureQueriesContext(connection) as ctx:
            services.regola_mark(session=locked, by=game.capo, patron=game.seat(3), declared=False)
        assert session_reads(ctx) == 1


def test_balances_name_a_patron_without_a_place_too(game):
    """The balances take their names from the session's places (every patron with postings
    held one); a posting of a patron who never held a place is still named (one more query)."""
    from django.utils import timezone

    from tables.models import Posting
    from tests.factories import PatronFactory

    coup = services.coup_record(
        session=game.session, by=game.capo, cards=["7H", "7S", "KH", "KD"], punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 10_00}],
    )  # fmt: skip
    state = selectors.session_game_state(game.session)
    seated = {b["patron"]: b["name"] for b in state["balances"]}
    assert seated[game.seat(2).pk] == game.seat(2).full_name
    outsider = PatronFactory(first_name="Nessuno", last_name="Fuori", created_by=game.commissario)
    Posting.objects.create(coup=coup, session=game.session, patron=outsider, role=Posting.Role.BETTOR,
                           amount=0, at=timezone.now())  # fmt: skip
    names = {b["patron"]: b["name"] for b in selectors.session_game_state(game.session)["balances"]}
    assert names[outsider.pk] == "Nessuno Fuori" and names[game.seat(2).pk] == game.seat(2).full_name
