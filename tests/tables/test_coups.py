"""Full coups through the services, for every chemin de fer profile (RULES.md §2-§4)."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from audit.models import AuditEvent
from tables import selectors, services
from tables.models import Bank, Bet, Coup, Posting, ShoeCard

# Cards in shoe order (punta, banker, punta, banker, ...), RULES.md §2.3.
BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands -> banker
PUNTA_WINS = ["7H", "6S", "KH", "KD"]  # punta 7 stands, banker 6 stands -> punta
TIE = ["7H", "7S", "KH", "KD"]  # 7 v 7
PUNTA_NATURAL = ["9H", "KS", "KC", "5D"]
BANKER_NATURAL = ["2H", "8S", "KC", "KD"]


def postings(coup: Coup) -> dict[int | None, int]:
    out: dict[int | None, int] = {}
    for p in Posting.objects.filter(coup=coup):
        out[p.patron_id] = out.get(p.patron_id, 0) + p.amount
    return out


def assert_balanced(coup: Coup) -> None:
    assert Posting.objects.filter(coup=coup).aggregate(s=Sum("amount"))["s"] == 0


def actions(session) -> list[str]:
    return list(
        AuditEvent.objects.filter(stream__name=session.audit_stream)
        .order_by("seq")
        .values_list("action", flat=True)
    )


def step_by_step(game, *, bets, cards, punta_draws, banker_stands=True) -> Coup:
    """The tablet's way: one service per action."""
    by = game.capo
    coup = services.coup_open(session=game.session, by=by)
    for patron, amount in bets:
        services.bet_place(coup=coup, by=by, patron=patron, amount=amount)
    services.rien_ne_va_plus(coup=coup, by=by)
    for card in cards[:4]:
        services.card_deal(coup=coup, by=by, card=card)
    coup.refresh_from_db()
    if coup.state == Coup.State.DEALING and punta_draws is not None:
        services.punta_declare(coup=coup, by=by, draws=punta_draws)
    for card in cards[4:]:
        services.card_deal(coup=coup, by=by, card=card)
    coup.refresh_from_db()
    if coup.state == Coup.State.DEALING and banker_stands:
        services.banker_decide(coup=coup, by=by, draws=False)
    coup.refresh_from_db()
    return coup


def test_venezia_banker_win_cagnotte_to_the_cent(game):
    p2, p3 = game.seat(2), game.seat(3)
    coup = step_by_step(game, bets=[(p2, 333_33), (p3, 200_00)], cards=BANKER_WINS, punta_draws=True)
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker" and coup.conforming
    # S = 533.33; 5% = 26.6665 euro -> nearest 10 cents = 26.70 (RULES.md §4).
    assert (coup.covered, coup.cagnotte, coup.banker_net) == (533_33, 26_70, 533_33 - 26_70)
    assert postings(coup) == {p2.pk: -333_33, p3.pk: -200_00, game.banker.pk: 506_63, None: 26_70}
    assert_balanced(coup)
    bank = Bank.objects.get(pk=game.bank.pk)
    # venezia WHOLE_STAKE: the new bank is B + S - cagnotte.
    assert (bank.amount, bank.status, bank.coups_completed) == (1000_00 + 533_33 - 26_70, "active", 1)
    assert coup.punta_id == p2.pk  # the highest bettor holds the cards
    assert coup.as_played["punta"] == {"cards": ["KH", "3C", "2S"], "total": 5}
    assert selectors.patron_balance(session=game.session, patron=p2) == -333_33
    assert actions(game.session)[-9:] == [
        "card.dealt",
        "card.dealt",
        "card.dealt",
        "card.dealt",
        "punta.declared",
        "card.dealt",
        "banker.decided",
        "coup.played",
        "coup.settled",
    ]
    settled = AuditEvent.objects.filter(action="coup.settled").get()
    assert settled.payload["cagnotte"] == 26_70
    assert settled.payload["bank"] == {"old": 1000_00, "new": 1506_63, "status": "active", "reserve_returned": 0}


def test_table_rounding_and_unit_are_used(make_game):
    game = make_game("venezia", cagnotte_unit_cents=100, cagnotte_rounding="down", cagnotte_rate_bp=250)
    coup = step_by_step(game, bets=[(game.seat(2), 533_33)], cards=BANKER_WINS, punta_draws=True)
    # 2.5% of 533.33 = 13.33 euro, down to the euro: 13.00
    assert coup.cagnotte == 13_00
    assert postings(coup)[None] == 13_00
    assert_balanced(coup)


def test_punta_win_ends_the_bank(game):
    p2, p5 = game.seat(2), game.seat(5)
    coup = step_by_step(game, bets=[(p2, 100_00), (p5, 400_00)], cards=PUNTA_WINS, punta_draws=False)
    assert coup.winner == "punta" and coup.punta_id == p5.pk and coup.cagnotte == 0
    assert postings(coup) == {p2.pk: 100_00, p5.pk: 400_00, game.banker.pk: -500_00, None: 0}
    bank = Bank.objects.get(pk=game.bank.pk)
    assert (bank.status, bank.end_reason, bank.amount, bank.coups_completed) == ("ended", "lost", 500_00, 1)
    assert "bank.lost" in actions(game.session)
    state = selectors.session_game_state(game.session)
    assert state["bank"] is None and state["cannot_open_because"] == ["no_active_bank"]
    # A later bank entered directly for a seated patron (not through the offers or the asta).
    bank2 = services.bank_open(session=game.session, by=game.capo, patron=game.seat(2), amount=200_00)
    assert (bank2.number, bank2.origin) == (2, "direct")


def test_venezia_tie_is_coup_nul(game):
    coup = step_by_step(game, bets=[(game.seat(2), 300_00)], cards=TIE, punta_draws=False)
    assert coup.winner == "tie"
    assert postings(coup) == {game.seat(2).pk: 0, game.banker.pk: 0, None: 0}
    bank = Bank.objects.get(pk=game.bank.pk)
    assert (bank.amount, bank.status, bank.coups_completed) == (1000_00, "active", 1)
    nxt = services.coup_open(session=game.session, by=game.capo)
    assert nxt.bank_amount == 1000_00 and not nxt.bets.exists()  # bets returned, same bank


def test_naturals(game):
    coup = step_by_step(game, bets=[(game.seat(2), 300_00)], cards=PUNTA_NATURAL, punta_draws=None)
    assert (coup.winner, coup.as_played["natural"], coup.punta_draws) == ("punta", True, None)
    game.bank = services.bank_open(session=game.session, by=game.capo, patron=game.seat(3), amount=500_00)
    coup = step_by_step(game, bets=[(game.seat(2), 200_00)], cards=BANKER_NATURAL, punta_draws=True)
    # The punta asked for a card; the banker's natural wins at once, no card given (§2.6).
    assert (coup.winner, coup.cards, coup.as_played["natural"]) == ("banker", BANKER_NATURAL, True)
    assert coup.cagnotte == 10_00


def test_classic_tie_bets_stay_for_the_next_coup(make_game):
    game = make_game("classic")
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=TIE,
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}, {"patron": game.seat(4), "amount": 100_00}],
    )
    assert coup.winner == "tie"
    nxt = services.coup_open(session=game.session, by=game.capo)
    carried = [(b.patron_id, b.amount, b.carried_from_id is not None) for b in nxt.bets.order_by("order")]
    assert carried == [(game.seat(2).pk, 300_00, True), (game.seat(4).pk, 100_00, True)]
    services.bet_place(coup=nxt, by=game.capo, patron=game.seat(6), amount=50_00)
    services.rien_ne_va_plus(coup=nxt, by=game.capo)
    nxt.refresh_from_db()
    assert nxt.covered == 450_00


def test_domestic_banker_win_keeps_2s_and_returns_the_reserve(make_game):
    game = make_game("domestic")
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 300_00}],
    )
    assert (coup.winner, coup.cagnotte) == ("banker", 0)
    bank = Bank.objects.get(pk=game.bank.pk)
    # domestic (RULES.md §4): the next bank is 2S; the uncovered B - S stays personal.
    assert (bank.amount, bank.reserve_returned) == (600_00, 700_00)
    assert bank.amount + bank.reserve_returned == bank.initial_amount + postings(coup)[game.banker.pk]


def test_domestic_tie_the_bank_continues_at_the_covered_stake(make_game):
    """Seed 002: on a tie the bets go back and the banker continues with at least the stake
    covered, S; his reserve B - S stays his, not forced back in (as after a win). He may
    put it back in (a raise)."""
    game = make_game("domestic")
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=TIE,
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}],
    )
    assert coup.winner == "tie" and coup.settlement["tie"]["bets_return"]
    bank = Bank.objects.get(pk=game.bank.pk)
    assert (bank.amount, bank.reserve_returned, bank.status) == (300_00, 700_00, "active")
    assert set(postings(coup).values()) <= {0}  # no money moves on a tie
    bank = services.bank_raise(bank=bank, by=game.capo, amount=1000_00)
    assert (bank.amount, bank.raised) == (1000_00, 700_00)


def test_chemmy_fi_burns_seven_and_forbids_banco_suivi(make_game, refused):
    game = make_game("chemmy-fi")
    assert game.shoe.state["burned"] == [None] * 7 and game.shoe.burn_cards == 7
    banco_taker = game.seat(4)
    coup = services.coup_record(
        session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True, banco=banco_taker
    )
    assert coup.banco_solo and coup.covered == 1000_00 and coup.winner == "banker" and coup.cagnotte == 0
    nxt = services.coup_open(session=game.session, by=game.capo)
    refused("banco_suivi_forbidden", services.banco_call, coup=nxt, by=game.capo, patron=banco_taker)
    services.banco_call(coup=nxt, by=game.capo, patron=game.seat(5))


def test_chemmy_fi_a_lost_banco_leaves_banco_avec_la_table_open(make_game):
    """What chemmy-fi forbids after a lost banco is a second *banco*: the whole bank alone
    (RULES.md's vocabulary and §2.2; seed 003: "pelaa yksin koko pelikassaa vastaan ... ei
    hän saa toista kertaa peräkkäin pelata bancoa"). Banco avec la table is half the bank,
    the table covering the rest: not a banco, so it stays his to bet."""
    game = make_game("chemmy-fi")
    banco_taker = game.seat(4)
    services.coup_record(session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True, banco=banco_taker)
    nxt = services.coup_open(session=game.session, by=game.capo)
    bet = services.bet_place(coup=nxt, by=game.capo, patron=banco_taker, kind=Bet.Kind.AVEC_LA_TABLE)
    assert bet.kind == Bet.Kind.AVEC_LA_TABLE and bet.amount * 2 == nxt.bank.amount


def test_chemmy_fi_burn_codes_are_checked(make_game):
    game = make_game("chemmy-fi", shoe=False, bank=None)
    shoe = services.shoe_load(
        session=game.session, by=game.capo, burn=["AS", None, None, None, None, None, "KD"]
    )
    assert shoe.state["burned"][0] == "AS"


def test_venezia_banco_suivi_has_priority(game):
    loser = game.seat(5)
    first = services.coup_record(
        session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True, banco=loser
    )
    assert first.winner == "banker" and first.punta_id == loser.pk
    # Bank is now 1950.00; seat 3 calls first and is nearer in turn from the banker (seat 1),
    # but the loser of the previous banco has priority (RULES.md §2.2).
    coup = services.coup_record(
        session=game.session, by=game.capo, cards=PUNTA_WINS, punta_draws=False, banco=[game.seat(3), loser]
    )
    assert coup.punta_id == loser.pk and coup.banco_solo
    calls = dict(coup.banco_calls.values_list("patron_id", "won"))
    assert calls == {game.seat(3).pk: False, loser.pk: True}


def test_banco_first_in_turn_from_the_banker(game):
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        banco=[game.standing[0], game.seat(7), game.seat(3)],
    )
    assert coup.punta_id == game.seat(3).pk
    assert Bet.objects.get(coup=coup).amount == 1000_00


def test_avec_la_table_holds_the_cards(game):
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        bets=[
            {"patron": game.seat(2), "amount": 400_00},
            {"patron": game.seat(6), "kind": "avec_la_table"},
            {"patron": game.standing[0], "amount": 100_00},
        ],
    )
    avec = Bet.objects.get(coup=coup, kind="avec_la_table")
    assert avec.amount == 500_00 and coup.punta_id == game.seat(6).pk and coup.covered == 1000_00
    assert not coup.banco_solo


def test_equal_highest_seated_beats_standing_and_barred_is_skipped(game):
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(3), reason="drew on 7")
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        bets=[
            {"patron": game.standing[0], "amount": 300_00},
            {"patron": game.seat(3), "amount": 400_00},
            {"patron": game.seat(7), "amount": 300_00},
        ],
    )
    # seat 3 is barred (he still bets and is paid); equal 300s: the seated one holds the cards.
    assert coup.punta_id == game.seat(7).pk
    assert postings(coup)[game.seat(3).pk] == 400_00


def test_withdraw_after_a_completed_coup(game, refused):
    refused("withdraw_too_early", services.bank_withdraw, bank=game.bank, by=game.capo)
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    coup = services.coup_open(session=game.session, by=game.capo)
    refused("coup_in_progress", services.bank_withdraw, bank=game.bank, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=100_00)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    for card in PUNTA_NATURAL:
        services.card_deal(coup=coup, by=game.capo, card=card)
    # punta won: the bank has ended already
    refused("bank_not_active", services.bank_withdraw, bank=game.bank, by=game.capo)
    bank = services.bank_open(session=game.session, by=game.capo, patron=game.seat(2), amount=300_00)
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=TIE,
        punta_draws=False,
        bets=[{"patron": game.seat(4), "amount": 100_00}],
    )
    bank = services.bank_withdraw(bank=bank, by=game.capo)
    assert (bank.status, bank.end_reason, bank.amount) == ("ended", "withdrawn", 300_00)
    assert actions(game.session)[-1] == "bank.withdrawn"


def test_regola_reconstruction_pending_then_final(game):
    """RULES examples 2 and 3: banker alla Regola stood on 3 against a 2."""
    by = game.capo
    services.regola_mark(session=game.session, by=by, patron=game.banker, declared=True)
    coup = services.coup_open(session=game.session, by=by)
    services.bet_place(coup=coup, by=by, patron=game.seat(2), amount=400_00)
    services.rien_ne_va_plus(coup=coup, by=by)
    for card in ["2H", "AS", "3C", "2D"]:
        services.card_deal(coup=coup, by=by, card=card)
    services.punta_declare(coup=coup, by=by, draws=True)
    services.card_deal(coup=coup, by=by, card="2S")
    state = selectors.session_game_state(game.session)["coup"]
    assert state["rule"]["rule"] == "banker_regola" and state["rule"]["cell"] == "draw"
    services.banker_decide(coup=coup, by=by, draws=False)
    coup.refresh_from_db()
    assert coup.state == "pending" and coup.needs == {"cards": 1} and coup.conforming is False
    assert coup.as_played["winner"] == "punta" and coup.violations[0]["side"] == "banker"
    assert not Posting.objects.filter(coup=coup).exists()
    state = selectors.session_game_state(game.session)["coup"]
    assert state["next"]["need"] == "reconstruction" and state["needs"] == {"cards": 1}
    services.reconstruction_card(coup=coup, by=by, card="6D")
    coup.refresh_from_db()
    assert coup.state == "settled" and coup.winner == "banker"
    assert coup.settled["banker"] == {"cards": ["AS", "2D", "6D"], "total": 9}
    assert coup.as_played["winner"] == "punta"  # both versions kept
    assert coup.cagnotte == 20_00 and postings(coup)[game.seat(2).pk] == -400_00
    assert_balanced(coup)
    sc = ShoeCard.objects.get(coup=coup, code="6D")
    assert sc.use == "reconstruction" and sc.position == 6
    acts = actions(game.session)
    assert acts.index("coup.pending") < acts.index("reconstruction.card") < acts.index("coup.settled")


def test_reconstruction_void_card(game):
    """RULES example 4: banker alla Regola with 6 drew although the punta stood: void."""
    services.regola_mark(session=game.session, by=game.capo, patron=game.banker, declared=True)
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=["4H", "3S", "3C", "3D", "9C"],
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    assert coup.state == "settled" and coup.winner == "punta" and coup.as_played["winner"] == "punta"
    assert coup.settled["void_cards"] == ["9C"] and coup.conforming is False
    card = ShoeCard.objects.get(coup=coup, code="9C")
    assert card.voided and card.void_reason
    game.refresh()
    assert game.shoe.state["voided"] == ["9C"]


def test_reconstruction_needs_a_decision(game):
    """RULES examples 5/6: punta alla Regola stood on 4; the replay reaches a free banker cell."""
    services.regola_mark(session=game.session, by=game.capo, patron=game.seat(2), declared=True)
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=["2H", "KS", "2C", "5D", "9D"],
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    assert coup.state == "pending" and coup.needs == {"decision": "banker"} and coup.regola_punta
    services.reconstruction_decide(coup=coup, by=game.capo, side="banker", draws=True)
    coup.refresh_from_db()
    assert coup.needs == {"cards": 1}
    services.reconstruction_card(coup=coup, by=game.capo, card="3H")
    coup.refresh_from_db()
    assert (coup.state, coup.winner, coup.settled["banker"]["total"]) == ("settled", "banker", 8)


def test_a_declaration_against_the_regola_before_the_bankers_natural_is_a_violation(game):
    """The punta alla Regola said carte on 6, then the banker showed a natural (§2.5-2.6):
    no card was given and the banker wins, but the declaration broke the Regola, which the
    coup records (the evidence for a faux tirage's bar); it settles on the replay, the same."""
    from tables.wording import violations_text

    services.regola_mark(session=game.session, by=game.capo, patron=game.seat(2), declared=True)
    coup = step_by_step(game, bets=[(game.seat(2), 200_00)], cards=["3H", "8S", "3C", "KD"], punta_draws=True)
    assert (coup.state, coup.winner, coup.conforming, coup.cagnotte) == ("settled", "banker", False, 10_00)
    assert coup.violations == [{"side": "punta", "rule": "punta_regola", "punta_total": 6, "banker_total": 8,
                                "punta_third_card": None, "punta_third_value": None, "required": "stand",
                                "done": "draw"}]  # fmt: skip
    assert coup.punta_draws is True and coup.settled["punta"]["cards"] == ["3H", "3C"]
    assert coup.settled["winner"] == "banker" and coup.settled["void_cards"] == []
    assert violations_text(coup.violations) == (
        "punta asked for a card on 6 before the banker's natural (punta alla Regola: stand)")
    assert_balanced(coup)
    played = AuditEvent.objects.get(stream__name=game.session.audit_stream, action="coup.played",
                                    subject_id=str(coup.pk))  # fmt: skip
    assert played.payload["conforming"] is False and played.payload["violations"] == coup.violations


def test_regola_mark_snapshot_only_for_the_players_of_the_coup(game):
    services.regola_mark(session=game.session, by=game.capo, patron=game.seat(7), declared=True)
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    assert (coup.regola_punta, coup.regola_banker) == (False, False)


def test_stop_card_ends_the_shoe_but_not_the_banker(game, refused):
    by = game.capo
    codes = [
        r + s for r in ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"] for s in "SHDC"
    ]
    # 302 cards out (voided), so 10 are left: the stop card stands before the last 7 (art. 58).
    out = [c for c in codes for _ in range(6)][:302]
    for code in out:
        services.card_void(session=game.session, by=by, card=code, reason="test: emptying the shoe")
    left = [c for c in codes for _ in range(6)][302:]
    game.refresh()
    assert game.shoe.stop_card_reached_at is None
    coup = services.coup_open(session=game.session, by=by)
    services.bet_place(coup=coup, by=by, patron=game.seat(2), amount=100_00)
    services.rien_ne_va_plus(coup=coup, by=by)
    for card in left[:4]:  # QC QD KS KH... whatever is left; totals 0 v 0
        services.card_deal(coup=coup, by=by, card=card)
    game.refresh()
    assert game.shoe.stop_card_reached_at is not None  # 6 left <= 7: the stop card appeared
    # ... but the current coup is finished (RULES.md §6).
    services.punta_declare(coup=coup, by=by, draws=True)
    services.card_deal(coup=coup, by=by, card=left[4])
    services.card_deal(coup=coup, by=by, card=left[5])
    coup.refresh_from_db()
    assert coup.state == "settled"
    assert "shoe.stop_card_reached" in actions(game.session)
    bank = Bank.objects.filter(session=game.session, status="active").first()
    if bank is None:
        bank = services.bank_open(session=game.session, by=by, patron=game.seat(2), amount=100_00)
    refused("stop_card_reached", services.coup_open, session=game.session, by=by)
    assert selectors.session_game_state(game.session)["cannot_open_because"] == ["stop_card_reached"]
    shoe2 = services.shoe_load(session=game.session, by=by, number="S-77")
    assert shoe2.seq == 2
    coup2 = services.coup_open(session=game.session, by=by)
    assert coup2.bank_id == bank.pk  # a new shoe never changes the banker
    assert coup2.shoe_id == shoe2.pk


def test_card_void_counts_as_out_of_the_shoe(game, refused):
    for _ in range(6):
        services.card_void(session=game.session, by=game.capo, card="AS", reason="seen face up")
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=100_00)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    refused("card_exhausted", services.card_deal, coup=coup, by=game.capo, card="AS")
    assert ShoeCard.objects.filter(use="void", voided=True).count() == 6


@pytest.mark.parametrize("profile", ["venezia", "classic", "domestic", "chemmy-fi"])
def test_every_profile_full_cycle(make_game, profile):
    game = make_game(profile)
    results = []
    for cards, draws in [(BANKER_WINS, True), (TIE, False), (BANKER_NATURAL, True), (PUNTA_WINS, False)]:
        coup = services.coup_record(
            session=game.session,
            by=game.capo,
            cards=cards,
            punta_draws=draws,
            bets=[]
            if Coup.objects.filter(session=game.session, winner="tie").exists()
            and profile in ("classic", "chemmy-fi")
            and cards == BANKER_NATURAL
            else [{"patron": game.seat(3), "amount": 200_00}],
        )
        assert_balanced(coup)
        results.append(coup.winner)
    assert results == ["banker", "tie", "banker", "punta"]
    bank = Bank.objects.get(pk=game.bank.pk)
    banker_total = Posting.objects.filter(coup__bank=bank, role="banker").aggregate(s=Sum("amount"))["s"]
    assert bank.amount + bank.reserve_returned == bank.initial_amount + banker_total
    assert bank.status == "ended" and bank.coups_completed == 4
