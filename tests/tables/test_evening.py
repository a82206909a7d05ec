"""An evening at a Venezia table: more than 60 coups recorded with coup_record from a real
shuffled 6-deck shoe (seeded), with a Regola coup reconstructed, ties, a banco suivi, a
withdrawal, the stop card and a new shoe for the same banker. Then the books reconcile to
the cent, recomputed here independently of the services."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from fractions import Fraction
from itertools import pairwise

from django.db.models import Sum

from audit.models import AuditEvent
from tables import selectors, services
from tables.engine import ALL_CARDS, PROFILES, hand_total, live
from tables.models import Bank, Coup, Posting, ShoeCard

VENEZIA = PROFILES["venezia"]


def shuffled_shoe(rng: random.Random) -> list[str]:
    cards = [c for c in ALL_CARDS for _ in range(6)]
    rng.shuffle(cards)
    return cards


def expected_cagnotte(covered: int) -> int:
    # 5% of S to the nearest 10 cents, halves up (RULES.md §4), recomputed by hand.
    tenths = Fraction(covered * 5, 100) / 10
    return int(tenths + Fraction(1, 2)) * 10


def test_an_evening_reconciles_to_the_cent(make_game):
    rng = random.Random(20240517)
    game = make_game("venezia", standing=2, bank=500_00)
    s, by = game.session, game.capo
    players = [*game.seated, *game.standing]
    regola_players = {game.seat(3).pk, game.seat(5).pk, game.seat(6).pk}
    for patron in players:
        if patron.pk in regola_players:
            services.regola_mark(session=s, by=by, patron=patron, declared=True)

    deck = shuffled_shoe(rng)
    pos = 0
    shoes_loaded = 1
    seen = Counter()
    force_violation = True
    last_banco_loser = None
    withdrawn = False
    expected_balance: dict[int, int] = defaultdict(int)
    expected_house = 0

    coups = 0
    while coups < 64:
        state = selectors.session_game_state(s)
        if "stop_card_reached" in state["cannot_open_because"]:
            banker_before = state["bank"]["banker"] if state["bank"] else None
            services.shoe_load(session=s, by=by, number=f"S-reshuffled-{shoes_loaded}")
            shoes_loaded += 1
            deck, pos = shuffled_shoe(rng), 0
            after = selectors.session_game_state(s)
            assert (after["bank"]["banker"] if after["bank"] else None) == banker_before
            seen["new_shoe"] += 1
            continue
        bank = Bank.objects.filter(session=s, status="active").first()
        if bank is None:
            # The next seat in increasing order takes a new bank (succession is the next issue).
            last = Bank.objects.filter(session=s).order_by("-number").first()
            seat = last.seat.seat_number % 8 + 1
            bank = services.bank_open(
                session=s, by=by, patron=game.seat(seat), amount=rng.choice([100_00, 300_00])
            )
        if not withdrawn and coups >= 20 and bank.coups_completed >= 1:
            services.bank_withdraw(bank=bank, by=by)
            withdrawn = True
            seen["withdrawal"] += 1
            continue

        others = [p for p in players if p.pk != bank.banker_id]
        banco = None
        bets = []
        if last_banco_loser is not None and last_banco_loser != bank.banker_id:
            # The loser of the last banco calls again, after a player nearer in turn: he has priority.
            loser = next(p for p in others if p.pk == last_banco_loser)
            nearer = next(p for p in others if p.pk != loser.pk)
            banco = [nearer, loser]
        elif rng.random() < 0.15:
            banco = [rng.choice(others)]
        else:
            open_amount = bank.amount
            for patron in rng.sample(others, rng.randint(1, 5)):
                amount = min(open_amount, rng.choice([10_00, 25_00, 50_00, 73_33, 100_00, 200_00]))
                if amount <= 0:
                    break
                bets.append({"patron": patron, "amount": amount})
                open_amount -= amount

        # Who will hold the cards decides whose Regola is in force: ask the engine's rules.
        regola_banker = bank.banker_id in regola_players
        cards, punta_draws, banker_draws = [], None, None
        violated = False
        while True:
            step = live.next_step(cards, punta_draws=punta_draws, banker_draws=banker_draws)
            if step.need == live.COMPLETE:
                break
            if step.need == live.PUNTA_DECLARATION:
                total = hand_total(cards[0:4:2])
                punta_draws = total <= 4  # conforms to every punta rule at Venezia (5: stand)
            elif step.need == live.BANKER_DECISION:
                hint = live.decision_hint(
                    VENEZIA, cards, punta_draws=punta_draws, regola_banker=regola_banker
                )
                if hint.cell == "free":
                    banker_draws = rng.random() < 0.5
                else:
                    banker_draws = hint.cell == "draw"
                    if regola_banker and force_violation and pos < 290:
                        banker_draws = not banker_draws  # a banker alla Regola breaks his table
                        violated = True
                if banker_draws is False:
                    continue
                cards.append(deck[pos])
                pos += 1
            else:
                cards.append(deck[pos])
                pos += 1

        coup = services.coup_record(
            session=s,
            by=by,
            cards=cards,
            punta_draws=punta_draws,
            banker_draws=banker_draws,
            bets=bets,
            banco=banco,
        )
        while coup.state == Coup.State.PENDING:
            if "cards" in coup.needs:
                services.reconstruction_card(coup=coup, by=by, card=deck[pos])
                pos += 1
            else:
                services.reconstruction_decide(
                    coup=coup, by=by, side=coup.needs["decision"], draws=rng.random() < 0.5
                )
            coup.refresh_from_db()
            seen["pending"] += 1
        coups += 1
        assert coup.state == Coup.State.SETTLED
        if violated:
            assert not coup.conforming and coup.regola_banker
            force_violation = False
            seen["reconstructed"] += 1
        if banco and len(banco) == 2:
            assert coup.punta_id == banco[1].pk  # banco suivi priority
            seen["banco_suivi"] += 1
        last_banco_loser = coup.punta_id if coup.banco_solo and coup.winner == "banker" else None
        seen[coup.winner] += 1

        # Independent books: bettors 1:1, banker the opposite less the cagnotte.
        cag = expected_cagnotte(coup.covered) if coup.winner == "banker" else 0
        sign = {"punta": 1, "banker": -1, "tie": 0}[coup.winner]
        for bet in coup.bets.all():
            expected_balance[bet.patron_id] += sign * bet.amount
        expected_balance[coup.bank.banker_id] += -sign * coup.covered - cag
        expected_house += cag
        assert coup.cagnotte == cag

    assert coups >= 60
    assert seen["reconstructed"] >= 1 and seen["tie"] >= 1 and seen["banco_suivi"] >= 1
    assert seen["withdrawal"] == 1 and seen["new_shoe"] >= 1
    assert seen["banker"] >= 1 and seen["punta"] >= 1

    # Every coup balances to the cent.
    per_coup = Posting.objects.filter(session=s).values("coup_id").annotate(total=Sum("amount"))
    assert len(per_coup) == Coup.objects.filter(session=s).count() >= 60
    assert all(row["total"] == 0 for row in per_coup)
    # The house's total is the sum of the cagnottes.
    cagnottes = Coup.objects.filter(session=s).aggregate(t=Sum("cagnotte"))["t"]
    assert selectors.house_cagnotte(session=s) == cagnottes == expected_house
    # Each patron's balance is his postings, and what the books say independently.
    state = selectors.session_game_state(s)
    balances = {row["patron"]: row["balance"] for row in state["balances"]}
    assert balances == {k: v for k, v in expected_balance.items() if k in balances}
    assert all(v == 0 for k, v in expected_balance.items() if k not in balances)
    assert sum(balances.values()) + state["house_cagnotte"] == 0
    for patron in players:
        assert selectors.patron_balance(session=s, patron=patron) == expected_balance.get(patron.pk, 0)
    # Each bank: what the banker holds = what he put up + his postings; a continuing bank's
    # next coup is played for exactly the amount the last one left.
    for bank in Bank.objects.filter(session=s):
        coups_of_bank = list(bank.coups.order_by("number"))
        banker_total = sum(
            Posting.objects.filter(coup__bank=bank, role="banker").values_list("amount", flat=True)
        )
        assert bank.amount + bank.reserve_returned == bank.initial_amount + banker_total
        assert bank.coups_completed == len(coups_of_bank)
        for before, after in pairwise(coups_of_bank):
            assert after.bank_amount == before.bank_amount + before.banker_net
    # The shoe: every card recorded in order, the audit trail has every step.
    dealt = ShoeCard.objects.filter(shoe__session=s, use="dealt").count()
    actions = Counter(AuditEvent.objects.filter(stream__name=s.audit_stream).values_list("action", flat=True))
    assert actions["card.dealt"] == dealt
    assert actions["coup.opened"] == actions["coup.settled"] == actions["coup.played"] == coups
    assert actions["coup.rien_ne_va_plus"] == coups
    assert actions["reconstruction.card"] + actions["reconstruction.decided"] == seen["pending"]
    assert actions["bank.withdrawn"] == 1 and actions["shoe.loaded"] == shoes_loaded
    assert actions["shoe.stop_card_reached"] == shoes_loaded - 1
