"""Benchmark of the rules engine's hot path (run by hand, not part of the tests).

    .venv/bin/python bench/engine.py [--coups N] [--seed S]

Deals N coups from shuffled 6-deck shoes (stopping at the stop card, 7 cards from the
end), with realistic declarations: the punta follows his rule (5 is a coin toss), the
banker follows the Regola when he declared it and chooses at random where he is free,
Regola declarations are occasional and so are violations. Each coup is entered as a
Capo Partita would end up entering it (pending reconstructions completed with the next
shoe cards and the missing decisions), then timed twice:

- the profile-driven engine: tables.engine.resolve (play + conformance + reconstruction);
- a hand-written fixed-rule function for venezia (the Regola as if/else), below.

Both must agree on every coup (checked), and the engine should be at least half as fast.
Then it times the exact 8-deck Punto Banco odds if tables.engine.odds is available.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tables.engine import ALL_CARDS, VALUES, get_profile, resolve

PROFILE = get_profile("venezia")
STOP_AT = PROFILE.stop_card_from_end

# -- the hand-written fixed-rule function (venezia, Regola hard-coded) ------------------------
V = dict(VALUES)  # canonical code -> value; upper-case codes only, as the generator deals


def regola_banker_draws(bt: int, third: int | None) -> bool | None:
    """RULES.md §3.1 by hand: True draw, False stand, None free."""
    if bt <= 2:
        return True
    if third is None:
        return bt <= 5
    if bt == 3:
        return None if third == 9 else third != 8
    if bt == 4:
        return 2 <= third <= 7
    if bt == 5:
        return None if third == 4 else 5 <= third <= 7
    if bt == 6:
        return third in (6, 7)
    return False


def punta_rule_draws(pt: int, regola: bool) -> bool | None:
    if pt <= 4:
        return True
    if pt == 5:
        return False if regola else None
    return False


def fixed_resolve(cards, punta_draws, regola_punta, regola_banker, next_cards, rec_punta, rec_banker):
    n = len(cards)
    c0, c1, c2, c3 = cards[0], cards[1], cards[2], cards[3]
    pt = (V[c0] + V[c2]) % 10
    bt = (V[c1] + V[c3]) % 10
    if pt >= 8 or bt >= 8:
        if n > 4 or next_cards:
            raise ValueError("cards after a natural")
        w = "punta" if pt > bt else "banker" if bt > pt else "tie"
        played = ((c0, c2), pt, (c1, c3), bt, w, True)
        return played, (), ("final", played, ())
    pdrew = punta_draws
    p3 = cards[4] if pdrew else None
    bdrew = n == (6 if pdrew else 5)
    b3 = cards[-1] if bdrew else None
    p3v = V[p3] if pdrew else None
    pf = (pt + (p3v or 0)) % 10
    bf = (bt + (V[b3] if bdrew else 0)) % 10
    w = "punta" if pf > bf else "banker" if bf > pf else "tie"
    played = ((c0, c2, p3) if pdrew else (c0, c2), pf, (c1, c3, b3) if bdrew else (c1, c3), bf, w, False)

    violations = []
    prule = punta_rule_draws(pt, regola_punta)
    if prule is not None and prule != pdrew:
        violations.append(("punta", pt, bt, p3, p3v, prule, pdrew))
    if regola_banker:
        brule = regola_banker_draws(bt, p3v)
        if brule is not None and brule != bdrew:
            violations.append(("banker", pt, bt, p3, p3v, brule, bdrew))
    if not violations:
        if next_cards:
            raise ValueError("unused next cards")
        return played, (), ("final", played, ())

    pool = list(cards[4:]) + list(next_cards)
    pos = 0
    rp = pdrew if prule is None else prule
    q3 = None
    if rp:
        if not pool:
            return played, violations, ("pending", {"cards": 1})
        q3 = pool[0]
        pos = 1
    q3v = V[q3] if rp else None
    rb = regola_banker_draws(bt, q3v) if regola_banker else None
    if rb is None:
        if q3v == p3v:
            rb = bdrew
        elif rec_banker is not None:
            rb = rec_banker
        else:
            return played, violations, ("pending", {"decision": "banker"})
    r3 = None
    if rb:
        if pos >= len(pool):
            return played, violations, ("pending", {"cards": 1})
        r3 = pool[pos]
        pos += 1
    real = n - 4
    if pos < real:
        void = tuple(cards[4 + pos :])
        if next_cards:
            raise ValueError("unused next cards")
    else:
        void = ()
        if len(next_cards) > pos - real:
            raise ValueError("unused next cards")
    qf = (pt + (q3v or 0)) % 10
    rf = (bt + (V[r3] if rb else 0)) % 10
    w = "punta" if qf > rf else "banker" if rf > qf else "tie"
    settled = ((c0, c2, q3) if rp else (c0, c2), qf, (c1, c3, r3) if rb else (c1, c3), rf, w, False)
    return played, violations, ("final", settled, void)


# -- the deal ------------------------------------------------------------------------------------
def declarations(rnd: random.Random, pt: int, regola_punta: bool) -> bool:
    rule = punta_rule_draws(pt, regola_punta)
    draws = rnd.random() < 0.5 if rule is None else rule
    return (not draws) if rnd.random() < 0.03 else draws  # an occasional false draw


def banker_decision(rnd: random.Random, bt: int, third: int | None, regola: bool) -> bool:
    rule = regola_banker_draws(bt, third) if regola else None
    draws = rnd.random() < 0.5 if rule is None else rule
    return (not draws) if rnd.random() < 0.03 else draws


def deal_coups(count: int, seed: int) -> list[tuple]:
    """Coups as entered: (cards, punta_draws, regola_punta, regola_banker, next_cards, rec_punta, rec_banker)."""
    rnd = random.Random(seed)
    coups: list[tuple] = []
    shoe: list[str] = []
    pos = 0
    while len(coups) < count:
        if len(shoe) - pos <= STOP_AT + 12:  # stop card reached (art. 58): new shoe
            shoe = [c for c in ALL_CARDS for _ in range(PROFILE.decks)]
            rnd.shuffle(shoe)
            pos = 0
        regola_punta = rnd.random() < 0.1
        regola_banker = rnd.random() < 0.25
        cards = shoe[pos : pos + 4]
        pt = (V[cards[0]] + V[cards[2]]) % 10
        bt = (V[cards[1]] + V[cards[3]]) % 10
        punta_draws = None
        k = 4
        if pt < 8:
            punta_draws = declarations(rnd, pt, regola_punta)
        if pt < 8 and bt < 8:
            third = None
            if punta_draws:
                third = V[shoe[pos + k]]
                k += 1
            if banker_decision(rnd, bt, third, regola_banker):
                k += 1
        cards = shoe[pos : pos + k]
        # Complete a pending reconstruction as the Capo Partita would (untimed).
        next_cards: list[str] = []
        rec_banker = None
        for _ in range(4):
            res = resolve(
                cards,
                PROFILE,
                punta_draws=punta_draws,
                regola_punta=regola_punta,
                regola_banker=regola_banker,
                next_cards=next_cards,
                reconstruction_banker_draws=rec_banker,
            )
            needs = res.settled.needs
            if needs is None:
                break
            if "cards" in needs:
                next_cards.append(shoe[pos + k + len(next_cards)])
            else:
                rec_banker = rnd.random() < 0.5
        coups.append(
            (tuple(cards), punta_draws, regola_punta, regola_banker, tuple(next_cards), None, rec_banker)
        )
        pos += k + len(next_cards)
    return coups


# -- timing --------------------------------------------------------------------------------------
def run_engine(coups: list[tuple]) -> list:
    out = []
    append = out.append
    profile = PROFILE
    for cards, pd, rp, rb, nxt, recp, recb in coups:
        append(
            resolve(
                cards,
                profile,
                punta_draws=pd,
                regola_punta=rp,
                regola_banker=rb,
                next_cards=nxt,
                reconstruction_punta_draws=recp,
                reconstruction_banker_draws=recb,
            )
        )
    return out


def run_engine_views(coups: list[tuple]) -> list:
    """The engine plus building the Coup/Hand views of both versions (what the floor and
    resolve_coups read): resolve() itself builds them only when read."""
    out = []
    append = out.append
    profile = PROFILE
    for cards, pd, rp, rb, nxt, recp, recb in coups:
        r = resolve(
            cards,
            profile,
            punta_draws=pd,
            regola_punta=rp,
            regola_banker=rb,
            next_cards=nxt,
            reconstruction_punta_draws=recp,
            reconstruction_banker_draws=recb,
        )
        append((r.as_played, r.settled))
    return out


def run_fixed(coups: list[tuple]) -> list:
    out = []
    append = out.append
    for cards, pd, rp, rb, nxt, recp, recb in coups:
        append(fixed_resolve(cards, pd, rp, rb, nxt, recp, recb))
    return out


def timed(fn, coups: list[tuple], repeat: int, chunk: int = 5000) -> tuple[float, list]:
    """Best-of-`repeat` per chunk, summed: the machine is shared, and load only ever adds
    time, so the minimum per chunk is the figure. GC is off while timing, as in timeit
    (collected once before, not per chunk: the kept results make a collection slow)."""
    total, results = 0.0, []
    gc.collect()
    gc.disable()
    try:
        for start in range(0, len(coups), chunk):
            part = coups[start : start + chunk]
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                out = fn(part)
                best = min(best, time.perf_counter() - t0)
            total += best
            results.extend(out)
    finally:
        gc.enable()
    return total, results


def agree(engine: list, fixed: list) -> int:
    """Count the coups where the two implementations disagree (should be 0)."""
    bad = 0
    for e, (played, violations, settled) in zip(engine, fixed, strict=True):
        p = e.as_played
        as_played = (p.punta.cards, p.punta.total, p.banker.cards, p.banker.total, p.winner, p.natural)
        same = as_played == played[:6]
        same = same and (e.punta_total, e.banker_total, e.winner) == (played[1], played[3], played[4])
        same = same and [v.side for v in e.violations] == [v[0] for v in violations]
        same = same and e.settled.status == settled[0]
        if same and settled[0] == "final":
            s = e.settled.coup
            same = (s.punta.cards, s.banker.cards, s.winner) == (settled[1][0], settled[1][2], settled[1][4])
            same = same and e.settled_winner == settled[1][4] and e.settled.void_cards == settled[2]
        bad += not same
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--coups", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=20070514)
    parser.add_argument("--repeat", type=int, default=5, help="best of this many runs per chunk")
    args = parser.parse_args()

    t0 = time.perf_counter()
    coups = deal_coups(args.coups, args.seed)
    dealt = time.perf_counter() - t0
    nonconforming = sum(1 for c in run_engine(coups) if c.violations)
    pending = sum(1 for c in run_engine(coups) if c.settled.status == "pending")
    print(
        f"dealt {len(coups)} coups in {dealt:.2f}s ({nonconforming} non-conforming, {pending} left pending)"
    )

    t_engine, engine = timed(run_engine, coups, args.repeat)
    t_views, _ = timed(run_engine_views, coups, args.repeat)
    t_fixed, fixed = timed(run_fixed, coups, args.repeat)
    mismatches = agree(engine, fixed)
    rate_engine, rate_fixed = len(coups) / t_engine, len(coups) / t_fixed
    ratio = rate_engine / rate_fixed
    print(f"engine (profile-driven): {rate_engine:12,.0f} coups/s  ({t_engine:.3f}s)")
    print(f"fixed rules (by hand):   {rate_fixed:12,.0f} coups/s  ({t_fixed:.3f}s)")
    rate_views = len(coups) / t_views
    print(
        f"engine + Coup/Hand views of both versions: {rate_views:,.0f} coups/s "
        f"(ratio {rate_views / rate_fixed:.2f}; the views are built on read)"
    )
    print(f"ratio engine/fixed: {ratio:.2f}  (target >= 0.50: {'met' if ratio >= 0.5 else 'NOT met'})")
    print(f"disagreements between the two: {mismatches}")

    try:
        from tables.engine.odds import exact_odds
    except ImportError:
        print("odds: not available")
    else:
        t0 = time.perf_counter()
        odds = exact_odds(get_profile("punto-banco"), decks=8)
        print(f"odds: exact 8-deck Punto Banco computed in {time.perf_counter() - t0:.3f}s")
        probabilities = getattr(odds, "probabilities", None)
        if isinstance(probabilities, dict):
            print("      " + ", ".join(f"{k} {float(v):.6f}" for k, v in probabilities.items()))
    if mismatches:
        sys.exit(1)


if __name__ == "__main__":
    main()
