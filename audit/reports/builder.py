"""The end-of-day report as a ReportDocument (audit/exports/document.py), for the writers.

Every section that grows with the day streams its rows from a server-side cursor
(`.iterator(chunk_size=CHUNK)` over a values_list): a section's `rows` is a callable that
opens a fresh cursor each time it is called, so one document serves the three writers and
memory stays flat in the number of coups. The figures per table are GROUP BY aggregates.

The banker's win rate per table (banker wins / decided coups; ties are void) is compared
with the engine's exact expectation for that table (tables.engine.odds.exact_odds with
the table's profile and decks and the profile's recommended strategy: free banker cells as
its recommended table advises, free punta cells standing). Which rules?
A table mixes coups with and without a declared Regola, banco solo or not; the expectation
uses the combination (regola_punta, regola_banker, banco_solo) most used among the
table's decided coups, and the report says which. The expected rate is
P(banker) / (P(banker) + P(punta)), conditional on a decided coup like the observed one.
The 95% interval around that expectation, for n decided coups of which k the banker won:
- when n·p0·(1-p0) >= 10 (EXACT_BELOW), the normal approximation p0 ± 1.96·sqrt(p0(1-p0)/n):
  the observed rate outside it is flagged (the score test, the same decision as "p0 outside
  the Wilson interval of the observed rate");
- below that (a table with few decided coups, where the normal curve misstates the tails
  of so few coups: 5 banker wins out of 5 were flagged, 3.4% likely at the table's odds),
  the exact binomial acceptance region [lo, hi] of X ~ Binomial(n, p0), two-sided, each tail
  at most 2.5%: lo the largest count with P(X < lo) <= 2.5%, hi the smallest with
  P(X > hi) <= 2.5%, computed in exact fractions (math.comb, Fraction). The interval is
  [lo/n, hi/n]; k outside [lo, hi] is flagged. The usual rule of thumb for the normal
  approximation is n·p·(1-p) >= 10; with p0 near 0.51 the exact region is used up to
  40 decided coups.
The Tables section says which method each table used (its "95% method" column and note)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone, translation

from audit.exports.document import Chart, Column, Money, ReportDocument, Section
from audit.exports.formatting import repeated_offset
from floor import selectors as floor_selectors
from tables import report_selectors as rs
from tables.engine.odds import exact_odds, recommended_strategy
from tables.wording import version_text, violations_text

from . import cash, unclaimed
from .words import euros_en, euros_it

if TYPE_CHECKING:
    from floor.models import GamingDay


def _when(at) -> str:
    """A moment as the rows show it: local time, to the second."""
    return timezone.localtime(at).isoformat(timespec="seconds")


def _limits_text(history) -> str:
    """Limits as the session line shows them, in the order they were in force:
    "100.00 EUR from 20:00; 150.00 EUR from 22:15" (local time; "02:15+02:00" in the hour the
    October change repeats); a maximum lifted says "none"."""
    return "; ".join(
        f"{'none' if item.amount is None else eur(item.amount)} from "
        f"{timezone.localtime(item.since):%H:%M}{repeated_offset(item.since)}"
        for item in history
    )


def _who(user) -> str:
    full = user.get_full_name()
    return f"{full} ({user.get_username()})" if full else user.get_username()

CHUNK = 2000
Z95 = 1.96
PROSE = 70  # the XLSX width of a column of sentences (the violations, a coup's versions)
# Below this n·p0·(1-p0) the banker's win rate is checked against the exact binomial region.
EXACT_BELOW = 10
TAIL95 = Fraction(1, 40)  # 2.5%: each tail of the exact two-sided 95% region
EXACT, NORMAL = "exact binomial", "normal approximation"

Tick = Callable[[], None]


def eur(cents: int | None) -> str:
    if cents is None:
        return ""
    sign = "-" if cents < 0 else ""
    euros, rest = divmod(abs(cents), 100)
    return f"{sign}{euros:,}.{rest:02d} EUR"


@lru_cache(maxsize=64)
def expected_banker_rate(profile: str, decks: int, regola_punta: bool, regola_banker: bool,
                         banco_solo: bool) -> Fraction:  # fmt: skip
    rules = {"regola_punta": regola_punta, "regola_banker": regola_banker, "banco_solo": banco_solo}
    odds = exact_odds(profile, decks=decks, strategy=recommended_strategy(profile, **rules), **rules)
    banker, punta = odds.probabilities["banker"], odds.probabilities["punta"]
    return banker / (banker + punta)


def binomial_acceptance(n: int, p0: Fraction) -> tuple[int, int]:
    """The exact two-sided 95% acceptance region [lo, hi] of X ~ Binomial(n, p0): lo the
    largest count with P(X < lo) <= 2.5%, hi the smallest with P(X > hi) <= 2.5% (each tail
    of the region at most 2.5%; lo <= hi, since the two tails together are at most 5%)."""
    p0 = Fraction(p0)
    q = 1 - p0
    pmf = [math.comb(n, k) * p0**k * q ** (n - k) for k in range(n + 1)]
    lo, below = 0, Fraction(0)
    while lo < n and below + pmf[lo] <= TAIL95:
        below += pmf[lo]
        lo += 1
    hi, above = n, Fraction(0)
    while hi > 0 and above + pmf[hi] <= TAIL95:
        above += pmf[hi]
        hi -= 1
    return lo, hi


def banker_rate_check(*, profile: str, decks: int, usage, banker_wins: int, punta_wins: int) -> dict[str, Any]:
    """The observed banker's win rate against the exact expectation, with its 95% interval:
    the normal approximation, or the exact binomial region when the table decided too few
    coups for it (module docstring); `method` says which."""
    n = banker_wins + punta_wins
    flags = usage.most_common(1)[0][0] if usage else (False, False, False)
    p0 = expected_banker_rate(profile, decks, *flags)
    out: dict[str, Any] = {
        "decided": n,
        "rules": {"regola_punta": flags[0], "regola_banker": flags[1], "banco_solo": flags[2]},
        "expected": f"{float(p0):.6f}",
        "expected_exact": f"{p0.numerator}/{p0.denominator}",
        "observed": None,
        "low": None,
        "high": None,
        "flagged": False,
        "method": None,
    }
    if n and n * p0 * (1 - p0) < EXACT_BELOW:
        lo, hi = binomial_acceptance(n, p0)
        out.update(
            observed=f"{banker_wins / n:.6f}",
            low=f"{lo / n:.6f}",
            high=f"{hi / n:.6f}",
            flagged=not lo <= banker_wins <= hi,
            method=EXACT,
        )
    elif n:
        observed = banker_wins / n
        half = Z95 * math.sqrt(float(p0) * (1 - float(p0)) / n)
        out.update(
            observed=f"{observed:.6f}",
            low=f"{max(0.0, float(p0) - half):.6f}",
            high=f"{min(1.0, float(p0) + half):.6f}",
            flagged=abs(observed - float(p0)) > half,
            method=NORMAL,
        )
    return out


def _methods_text(per_table: dict[int, dict[str, Any]]) -> str:
    """Which tables' intervals are exact, which normal: "Exact binomial: table 2. Normal
    approximation: tables 1, 3." (a table with no decided coup has no interval)."""
    parts = []
    for method in (EXACT, NORMAL):
        numbers = [str(n) for n in sorted(per_table) if per_table[n]["banker_rate"]["method"] == method]
        if numbers:
            parts.append(f"{method.capitalize()}: {'table' if len(numbers) == 1 else 'tables'} {', '.join(numbers)}.")
    return " ".join(parts) or "No table decided a coup."


_RULE_WORDS = {"regola_punta": "punta alla Regola", "regola_banker": "banker alla Regola", "banco_solo": "banco solo"}


def _rules_text(rules: dict[str, bool]) -> str:
    """The rules of the expectation in words: "punta alla Regola, banco solo"."""
    on = [_RULE_WORDS.get(name, name) for name, value in rules.items() if value]
    return ", ".join(on) if on else "no Regola, bets for several"


@dataclass
class Built:
    document: ReportDocument
    summary: dict[str, Any]
    rows: int  # rows the document yields per writer (progress)


def _streamed(qs, tick: Tick, convert: Callable[[tuple], Iterable[Any]] | None = None):
    def rows():
        for row in qs.iterator(chunk_size=CHUNK):
            tick()
            yield convert(row) if convert else row

    return rows


def _annulled_row(row: tuple) -> tuple:
    """An annulled coup's cards in shoe order as one text (none: annulled before its cards;
    the Commissario's annulment of a coup under way leaves its cards out of the shoe)."""
    *head, cards, next_cards, n_bets, total = row
    return (*head, " ".join([*(cards or ()), *(next_cards or ())]), n_bets, total)


def _listed(items: list, tick: Tick):
    def rows():
        for row in items:
            tick()
            yield row

    return rows


def _cols(*spec: tuple) -> list[Column]:
    """Columns from (key, title, kind) or (key, title, kind, XLSX width)."""
    return [Column(*column) for column in spec]


def build_document(
    *, day: GamingDay, version: int, seal: str, streams: list[str], register=None, counts=(), count_history=None,
    tick: Tick = lambda: None,
) -> Built:
    """The report of a closed day. `register` is the signed control register a version >= 2
    includes; `counts` the cagnotte counts in force (CagnotteCount rows), which the figures
    use; `count_history` every count of the day, corrected ones included, which its section
    lists (nothing is edited: a correction is a new count; default: the counts in force).
    Given the history alone, the counts in force are those no other count corrects."""
    if count_history is not None and not counts:
        count_history = list(count_history)
        superseded = {c.corrects_id for c in count_history}
        counts = [c for c in count_history if c.pk not in superseded]
    day_id = day.pk
    tables = {t.pk: t for t in floor_selectors.day_tables(gaming_day_id=day_id)}
    figures = rs.table_figures(gaming_day_id=day_id)
    usage = rs.rule_usage(gaming_day_id=day_id)
    sessions = list(floor_selectors.day_sessions(gaming_day_id=day_id))
    session_figures = rs.session_figures(gaming_day_id=day_id)
    limits = floor_selectors.day_session_limits(gaming_day_id=day_id, sessions=sessions)
    counts = {c.table_id: c for c in counts}

    per_table: dict[int, dict[str, Any]] = {}
    table_rows = []
    for table_id, t in sorted(tables.items(), key=lambda kv: kv[1].number):
        f = figures.get(table_id) or dict.fromkeys(
            ("coups", "annulled", "settled", "banker_wins", "punta_wins", "ties", "non_conforming", "covered",
             "levies_recorded", "expected_cagnotte"), 0)  # fmt: skip
        rate = banker_rate_check(profile=t.profile, decks=t.decks, usage=usage.get(table_id),
                                 banker_wins=f["banker_wins"], punta_wins=f["punta_wins"])  # fmt: skip
        count = counts.get(table_id)
        per_table[t.number] = {**f, "banker_rate": rate, "profile": t.profile, "decks": t.decks,
                               "counted": None if count is None else count.counted,
                               "carried": None if count is None else count.carried}  # fmt: skip
        table_rows.append([
            t.number, t.profile, t.decks, sum(1 for s in sessions if s.table_id == table_id), f["coups"],
            f["annulled"], f["banker_wins"], f["punta_wins"], f["ties"], rate["decided"], rate["observed"] or "",
            rate["expected"], rate["low"] or "", rate["high"] or "", rate["method"] or "", _rules_text(rate["rules"]),
            rate["flagged"],
            f["non_conforming"], f["levies_recorded"], f["expected_cagnotte"],
            None if count is None else count.counted, None if count is None else count.carried,
        ])  # fmt: skip

    total = {k: sum(f[k] for f in per_table.values()) for k in
             ("coups", "annulled", "banker_wins", "punta_wins", "ties", "non_conforming", "covered", "levies_recorded",
              "expected_cagnotte")}  # fmt: skip
    counted_all = len(counts) == len(tables) and bool(tables)
    carried = sum(c.carried for c in counts.values()) if counted_all else None
    summary = {
        "gaming_day": day_id,
        "date": day.date.isoformat(),
        "version": version,
        **total,
        "decided": total["banker_wins"] + total["punta_wins"],
        "sessions": len(sessions),
        "counted": sum(c.counted for c in counts.values()) if counted_all else None,
        "carried": carried,
        "tables": {str(k): v for k, v in per_table.items()},
        "flagged_tables": [n for n, v in per_table.items() if v["banker_rate"]["flagged"]],
        "control_register": None if register is None else register.pk,
        "seal": seal,
    }

    # Art. 70 names the croupiers and changeurs of each session: all of them, in turn, when
    # they were relieved (the staff changes section says when and why).
    reliefs: dict[int, list] = {}
    for change in (
        floor_selectors.day_staff_changes(gaming_day_id=day_id)
    ):
        reliefs.setdefault(change.session_id, []).append(change)

    def in_turn(session, role: str) -> str:
        return " → ".join(_who(user) for user, _since in floor_selectors.staff_in_turn(session, reliefs.get(session.pk), role))

    session_rows = []
    for s in sessions:
        f = session_figures.get(s.pk, {})
        session_rows.append([
            s.table.number, s.number, s.opened_at, s.closed_at, in_turn(s, "capo_partita"),
            in_turn(s, "changeur"), s.shoe_number, _limits_text(limits[s.pk].minimums),
            # a maximum never set is a blank cell, as in the changes' section
            _limits_text(limits[s.pk].maximums) if limits[s.pk].had_maximum else "", f.get("coups", 0), f.get("annulled", 0),
            f.get("banker_wins", 0),
            f.get("levies_recorded", 0), f.get("expected_cagnotte", 0),
        ])  # fmt: skip

    def nonconf(row):
        # In words, as the tablet says them (tables.wording), in the report's English; the
        # cards by their codes, as the cards column prints them.
        (t, s, n, cards, pd, bd, rp, rb, violations, as_played, settled, next_cards, winner, levy) = row
        with translation.override("en"):
            return [t, s, n, " ".join(cards or ()), pd, bd, rp, rb, violations_text(violations),
                    version_text(as_played), version_text(settled), " ".join(next_cards or ()), winner, levy]  # fmt: skip

    sections: list[Section] = [
        Section("tables", "Tables: figures of the day and the banker's win rate", _cols(
            ("table", "Table", "int"), ("profile", "Profile", "text"), ("decks", "Decks", "int"),
            ("sessions", "Sessions", "int"), ("coups", "Coups", "int"), ("annulled", "Annulled", "int"),
            ("banker_wins", "Banker wins", "int"),
            ("punta_wins", "Punta wins", "int"), ("ties", "Ties", "int"), ("decided", "Decided", "int"),
            ("win_rate", "Banker win rate", "rate"), ("expected", "Expected (exact)", "rate"),
            ("low", "95% low", "rate"), ("high", "95% high", "rate"), ("method", "95% method", "text"),
            ("rules", "Rules of the expectation", "text"),
            ("flagged", "Outside 95%", "bool"), ("non_conforming", "Non-conforming", "int"),
            ("levies", "Levies recorded", "money"), ("expected_cagnotte", "Expected cagnotte", "money"),
            ("counted", "Counted cagnotte", "money"), ("carried", "Carried", "money"),
        ), _listed(table_rows, tick), note="Expected rate: exact odds of the table's profile and decks, the profile's "
                   "recommended strategy, under the rules most used at the table; ties excluded. 95% interval: the "
                   "normal approximation p0 ± 1.96·sqrt(p0(1-p0)/n) when n·p0·(1-p0) >= 10 (n decided coups), else "
                   f"the exact binomial acceptance region, each tail at most 2.5%. {_methods_text(per_table)}"),
        Section("sessions", "Cagnotte register: sessions (art. 70)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("opened_at", "Opened", "datetime"),
            ("closed_at", "Closed", "datetime"), ("capo_partita", "Croupiers (in turn)", "text"),
            ("changeur", "Changeurs (in turn)", "text"), ("shoe_number", "Shoe (at opening)", "text"),
            ("minimums", "Minimum (each in force from)", "text"), ("maximums", "Maximum (each in force from)", "text"),
            ("coups", "Coups", "int"), ("annulled", "Annulled", "int"), ("banker_wins", "Banker wins", "int"),
            ("levies", "Levies recorded", "money"), ("expected_cagnotte", "Expected cagnotte", "money"),
        ), _listed(session_rows, tick), note="Minimum and maximum: the limits at the opening, then each change with "
                   "its time (local); the changes' section below says who made them and why. A blank maximum: none."),
        Section("interruptions", "Interruptions and resumptions", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("interrupted_at", "Interrupted", "datetime"),
            ("interrupted_by", "Interrupted by", "text"), ("reason", "Reason", "text"), ("resumed_at", "Resumed", "datetime"),
            ("resumed_by", "Resumed by", "text"), ("resume_reason", "Reason for resuming", "text"),
        ), _streamed(floor_selectors.day_interruption_rows(gaming_day_id=day_id), tick)),
        Section("minimum_changes", "Minimum and maximum changes", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("at", "At", "datetime"), ("by", "By", "text"),
            ("old", "Old minimum", "money"), ("new", "New minimum", "money"),
            ("old_maximum", "Old maximum", "money"), ("new_maximum", "New maximum", "money"), ("reason", "Reason", "text"),
        ), _streamed(floor_selectors.day_minimum_change_rows(gaming_day_id=day_id), tick),
            note="A blank maximum: the table had none. A change of the minimum alone shows the maximum unchanged."),
        Section("staff_changes", "Staff changes (the croupiers' relief)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("at", "At", "datetime"), ("by", "By", "text"),
            ("old_capo_partita", "Croupier before", "text"), ("new_capo_partita", "Croupier after", "text"),
            ("old_changeur", "Changeur before", "text"), ("new_changeur", "Changeur after", "text"),
            ("reason", "Reason", "text"),
        ), _streamed(floor_selectors.day_staff_change_rows(gaming_day_id=day_id), tick)),
        Section("shoes", "Shoes used", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("shoe", "Shoe", "int"),
            ("number", "Number", "text"), ("decks", "Decks", "int"), ("loaded_at", "Loaded", "datetime"),
            ("loaded_by", "By", "text"), ("finished_at", "Finished", "datetime"), ("cards_out", "Cards out", "int"),
            ("voided", "Voided", "int"),
        ), _streamed(rs.shoe_rows(gaming_day_id=day_id), tick)),
        Section("banks", "Bankers: each bank described separately (art. 71)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("bank", "Bank", "int"),
            ("banker", "Banker", "text"), ("origin", "Origin", "text"), ("opened_at", "Opened", "datetime"),
            ("ended_at", "Ended", "datetime"), ("end_reason", "End", "text"), ("initial", "Initial bank", "money"),
            ("raised", "Put up since", "money"), ("amount", "Last bank", "money"), ("coups", "Coups", "int"), ("banker_wins", "Won", "int"),
            ("covered", "Covered", "money"), ("levies", "Levies", "money"), ("banker_net", "Banker net", "money"),
        ), _streamed(rs.bank_rows(gaming_day_id=day_id), tick)),
        Section("coups", "Coups: the levy of every coup (art. 56-1)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("coup", "Coup", "int"), ("bank", "Bank", "int"),
            ("banker", "Banker", "text"), ("at", "Settled", "datetime"), ("bank_amount", "Bank amount", "money"),
            ("covered", "Pot (covered)", "money"), ("banco_solo", "Banco", "bool"),
            ("regola_punta", "Punta Regola", "bool"), ("regola_banker", "Banker Regola", "bool"),
            ("winner", "Winner", "text"), ("natural", "Natural", "bool"), ("levy", "Levy", "money"),
            ("paid", "Paid to winner", "money"), ("conforming", "Conforming", "bool"), ("state", "State", "text"),
        ), _streamed(rs.coup_rows(gaming_day_id=day_id), tick)),
        Section("annulled", "Coups annulled (no money moved, the bets went back)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("coup", "Coup", "int"),
            ("annulled_at", "Annulled", "datetime"), ("annulled_by", "By", "text"), ("reason", "Reason", "text"),
            ("cards", "Cards out of the shoe", "text"),
            ("bets", "Bets returned", "int"), ("bets_total", "Their total", "money"),
        ), _streamed(rs.annulled_rows(gaming_day_id=day_id), tick, _annulled_row)),
        Section("bets", "Bets and what each paid or was paid", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("coup", "Coup", "int"),
            ("order", "Order", "int"), ("patron", "Patron", "text"), ("seat", "Seat", "int"),
            ("standing", "Standing", "bool"), ("kind", "Kind", "text"), ("amount", "Bet", "money"),
            ("carried_from", "Carried from coup", "int"), ("winner", "Winner", "text"),
            ("result", "Won (+) / lost (-)", "money"),
        ), _streamed(rs.bet_rows(gaming_day_id=day_id), tick)),
        Section("patron_balances", "Each patron's balance per session", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("patron_id", "Patron no.", "int"),
            ("patron", "Patron", "text"), ("coups", "Coups", "int"), ("won", "Received", "money"),
            ("lost", "Paid", "money"), ("balance", "Balance", "money"),
        ), _streamed(rs.patron_balance_rows(gaming_day_id=day_id), tick)),
        Section("non_conforming", "Non-conforming coups: as played and reconstructed (RULES.md §3.3)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("coup", "Coup", "int"),
            ("cards", "Cards as played", "text"), ("punta_draws", "Punta drew", "bool"),
            ("banker_draws", "Banker drew", "bool"), ("regola_punta", "Punta Regola", "bool"),
            ("regola_banker", "Banker Regola", "bool"), ("violations", "Violations", "text", PROSE),
            ("as_played", "As played", "text", PROSE), ("reconstruction", "Reconstruction (settled)", "text", PROSE),
            ("next_cards", "Shoe cards drawn for it", "text"), ("winner", "Winner", "text"), ("levy", "Levy", "money"),
        ), _streamed(rs.non_conforming_rows(gaming_day_id=day_id), tick, nonconf)),
        Section("voided_cards", "Voided cards", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("shoe", "Shoe", "int"),
            ("shoe_number", "Shoe number", "text"), ("position", "Position", "int"), ("card", "Card", "text"),
            ("reason", "Reason", "text"), ("at", "At", "datetime"), ("by", "By", "text"),
        ), _streamed(rs.voided_card_rows(gaming_day_id=day_id), tick)),
        Section("faux_tirage_bars", "Faux-tirage bars (art. 60)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("patron", "Patron", "text"),
            ("coup", "Coup", "int"), ("reason", "Reason", "text"), ("at", "At", "datetime"), ("by", "By", "text"),
        ), _streamed(rs.faux_tirage_bar_rows(gaming_day_id=day_id), tick)),
        Section("successions", "Successions of the bank (RULES.md §5)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("succession", "Succession", "int"),
            ("started_at", "Started", "datetime"), ("outgoing", "Outgoing banker", "text"), ("reason", "Why", "text"),
            ("kind", "Offered as", "text"), ("amount", "Bank offered", "money"), ("floor", "Continuation", "money"),
            ("minimum", "Minimum", "money"), ("status", "Outcome", "text"), ("lapse_reason", "Lapsed because", "text"),
            ("successor", "New banker", "text"), ("new_bank", "New bank", "money"), ("origin", "By way of", "text"),
            ("ended_at", "Ended", "datetime"), ("ended_by", "By", "text"),
        ), _streamed(rs.succession_rows(gaming_day_id=day_id), tick),
            note="Outcome: taken, lapsed, or still offering/unclaimed/at auction when the day was built. By way of: "
                 "succession (an offer in turn), auction (the asta), direct (entered by the Capo Partita)."),
        Section("succession_offers", "Offers of the bank, in the order of the right to it", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("succession", "Succession", "int"),
            ("order", "Order", "int"), ("round", "Round", "text"), ("patron", "Player", "text"), ("seat", "Seat", "int"),
            ("amount_min", "From", "money"), ("amount_max", "Up to", "money"), ("status", "Answer", "text"),
            ("reason", "Skipped because", "text"), ("amount", "Amount", "money"), ("answered_at", "Answered", "datetime"),
            ("answered_by", "Entered by", "text"),
        ), _streamed(rs.succession_offer_rows(gaming_day_id=day_id), tick)),
        Section("auctions", "Auctions of the bank (asta, RULES.md §5)", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("succession", "Succession", "int"),
            ("status", "Status", "text"), ("opened_at", "Opened", "datetime"), ("opened_by", "Opened by", "text"),
            ("closed_at", "Closed", "datetime"), ("closed_by", "Closed by", "text"), ("bids", "Bids", "int"),
            ("winner", "Winner", "text"), ("winning_bid", "Winning bid", "money"),
        ), _streamed(rs.auction_rows(gaming_day_id=day_id), tick)),
        Section("auction_bids", "Bids at the asta, in their order", _cols(
            ("table", "Table", "int"), ("session", "Session", "int"), ("succession", "Succession", "int"),
            ("seq", "Order", "int"), ("patron", "Bidder", "text"), ("seat", "Seat", "int"),
            ("standing", "Standing", "bool"), ("amount", "Bid", "money"), ("at", "At", "datetime"),
            ("by", "Entered by", "text"), ("won", "Won", "bool"),
        ), _streamed(rs.bid_rows(gaming_day_id=day_id), tick)),
    ]
    listed = list(counts.values()) if count_history is None else list(count_history)
    corrected = {c.corrects_id: c.pk for c in listed if c.corrects_id is not None}
    count_rows = [
        [c.pk, tables[c.table_id].number, c.expected, c.counted, c.surplus, c.shortfall, c.carried,
         c.counted_by.get_username(), c.witness.get_username(), c.counted_at, c.corrects_id, corrected.get(c.pk),
         c.note]
        for c in sorted(listed, key=lambda c: (tables[c.table_id].number, c.counted_at, c.pk))
    ]  # fmt: skip
    sections.append(Section("cagnotte_counts", "Cagnotte counts (art. 70; a corrected count stays, with its correction)", _cols(
        ("count", "Count", "int"),
        ("table", "Table", "int"), ("expected", "Expected", "money"), ("counted", "Counted", "money"),
        ("surplus", "Surplus (extra levy)", "money"), ("shortfall", "Shortfall (borne by the casino)", "money"),
        ("carried", "Carried", "money"), ("counted_by", "Counted by", "text"), ("witness", "Witness", "text"),
        ("counted_at", "At", "datetime"), ("corrects", "Corrects count", "int"),
        ("corrected_by", "Corrected by count", "int"), ("note", "Note", "text"),
    ), _listed(count_rows, tick), note="" if counted_all else "Not every table is counted yet."))  # fmt: skip

    # Unclaimed stakes and winnings (RULES.md §6), as the books stand at the build: a return
    # recorded since is not in this version (its files are what the books said then).
    deposits = sorted(unclaimed.day_deposits(gaming_day_id=day_id),
                      key=lambda d: (d.session.table.number, d.session.number, d.recorded_at, d.pk))  # fmt: skip
    held = {
        "count": len(deposits),
        "stakes": sum(d.amount for d in deposits if d.kind == d.Kind.STAKE),
        "winnings": sum(d.amount for d in deposits if d.kind == d.Kind.WINNINGS),
        "total": sum(d.amount for d in deposits),
        "outstanding": sum(d.amount for d in deposits if not d.returned),
        "returned": sum(d.amount for d in deposits if d.returned),
    }
    # Each deposit listed, as its payload's digest: verification holds the rows the report
    # printed to the events in the day's books stream as of the build (`unclaimed_mismatch`).
    summary["unclaimed"] = {**held, "as_recorded": {
        str(d.pk): unclaimed.payload_digest(unclaimed.deposit_payload(d)) for d in deposits}}  # fmt: skip
    deposit_rows = [
        [d.pk, d.session.table.number, d.session.number, None if d.coup is None else d.coup.number,
         None if d.patron is None else d.patron.full_name, d.kind, d.amount, d.deposited_in, d.note,
         d.recorded_by.get_username(), d.recorded_at, d.returned_to or None,
         None if d.returned_by is None else d.returned_by.get_username(), d.returned_at, d.returned_note]
        for d in deposits
    ]  # fmt: skip
    sections.append(Section("unclaimed", "Unclaimed stakes and winnings (RULES.md §6)", _cols(
        ("deposit", "Deposit", "int"), ("table", "Table", "int"), ("session", "Session", "int"),
        ("coup", "Coup", "int"), ("patron", "Patron", "text"), ("kind", "Kind", "text"),
        ("amount", "Amount", "money"), ("deposited_in", "Deposited in", "text"), ("note", "Note", "text"),
        ("recorded_by", "Recorded by", "text"), ("recorded_at", "Recorded at", "datetime"),
        ("returned_to", "Handed back to", "text"), ("returned_by", "Handed back by", "text"),
        ("returned_at", "Handed back at", "datetime"), ("returned_note", "Return note", "text"),
    ), _listed(deposit_rows, tick), note=(
        f"Collected by the Commissario and deposited: {held['count']}, {eur(held['total'])} (stakes "
        f"{eur(held['stakes'])}, winnings {eur(held['winnings'])}); outstanding {eur(held['outstanding'])}, handed "
        f"back {eur(held['returned'])}. As the books stood when this version was built: a deposit handed back "
        "since shows here as outstanding." if deposits else "No unclaimed stake or winnings was deposited on this day."
    )))  # fmt: skip

    # The changeur's register (tables.services.cash): every line of the day, voided ones
    # included, and the patrons whose exchanges of the whole day (every table and session,
    # both directions, voids left out) reached the AML identification threshold.
    exchanges = list(cash.day_exchanges(gaming_day_id=day_id))
    standing = [x for x in exchanges if x.voided_at is None]
    threshold = settings.AML_IDENTIFY_CENTS
    by_patron: dict[int, dict[str, Any]] = {}
    for x in standing:
        if x.patron is not None:
            line = by_patron.setdefault(x.patron_id, {"patron": x.patron_id, "name": x.patron.full_name,
                                                      "total": 0, "count": 0})  # fmt: skip
            line["total"] += x.amount
            line["count"] += 1
    aml = sorted((line for line in by_patron.values() if line["total"] >= threshold),
                 key=lambda line: (-line["total"], line["name"], line["patron"]))  # fmt: skip
    buy_ins = sum(x.amount for x in standing if x.direction == x.Direction.BUY_IN)
    cash_outs = sum(x.amount for x in standing if x.direction == x.Direction.CASH_OUT)
    exchanged = {"count": len(standing), "buy_ins": buy_ins, "cash_outs": cash_outs, "net": buy_ins - cash_outs,
                 "voided": len(exchanges) - len(standing), "threshold": threshold}  # fmt: skip
    # Each line listed, as its payload's digest: verification holds the rows the report
    # printed to the session streams' events as of the build (`cash_mismatch`).
    summary["cash"] = {**exchanged, "aml": [{k: line[k] for k in ("patron", "total", "count")} for line in aml],
                       "as_recorded": {str(x.pk): unclaimed.payload_digest(cash.exchange_payload(x))
                                       for x in exchanges}}  # fmt: skip
    cash_rows = [
        [x.session.table.number, x.session.number, x.number, x.at, x.direction, x.amount,
         None if x.patron is None else x.patron.full_name, x.identification_required, x.by.get_username(),
         x.voided_at, None if x.voided_by is None else x.voided_by.get_username(), x.void_reason]
        for x in exchanges
    ]  # fmt: skip
    sections.append(Section("cash_exchanges", "Cash exchanged at the tables (changeur)", _cols(
        ("table", "Table", "int"), ("session", "Session", "int"), ("line", "Line", "int"), ("at", "At", "datetime"),
        ("direction", "Direction", "text"), ("amount", "Amount", "money"), ("patron", "Patron", "text"),
        ("identification_required", "Identification required", "bool"), ("by", "Recorded by", "text"),
        ("voided_at", "Voided at", "datetime"), ("voided_by", "Voided by", "text"),
        ("void_reason", "Void reason", "text"),
    ), _listed(cash_rows, tick), note=(
        f"Exchanges standing: {exchanged['count']}; buy-ins (cash for chips) {eur(buy_ins)}, cash-outs (chips for "
        f"cash) {eur(cash_outs)}, net {eur(exchanged['net'])}; voided: {exchanged['voided']} (listed, not in the "
        "totals)." if exchanges else "No cash was exchanged at the tables on this day."
    )))  # fmt: skip
    aml_rows = [[line["patron"], line["name"], line["total"], line["count"]] for line in aml]
    sections.append(Section("cash_aml", "Patrons at or above the identification threshold (AML)", _cols(
        ("patron_id", "Patron no.", "int"), ("patron", "Patron", "text"), ("total", "Exchanged in the day", "money"),
        ("exchanges", "Exchanges", "int"),
    ), _listed(aml_rows, tick), note=(
        f"Threshold {eur(threshold)} (AML_IDENTIFY_CENTS): each named patron's exchanges of the gaming day, at every "
        "table and session, buy-ins and cash-outs together, voided lines left out. "
        + (f"Patrons at or above it: {len(aml)}." if aml else "No patron reached it.")
    )))  # fmt: skip

    facts = [
        ("Gaming day", f"{day.date.isoformat()} ({day.casino.name})"),
        ("Report version", version),
        ("Opened", _when(day.opened_at)),
        ("Closed", _when(day.closed_at) if day.closed_at else ""),
        ("Sessions", len(sessions)),
        ("Coups", total["coups"]),
        ("Coups annulled", total["annulled"]),
        ("Levies recorded", Money(total["levies_recorded"])),
        ("Expected cagnotte (sum of the house postings)", Money(total["expected_cagnotte"])),
        ("Counted cagnotte", Money(summary["counted"]) if counted_all else "not counted yet"),
        ("Unclaimed stakes and winnings deposited", held["count"]),
        ("Unclaimed stakes", Money(held["stakes"])),
        ("Unclaimed winnings", Money(held["winnings"])),
        ("Unclaimed, outstanding when built", Money(held["outstanding"])),
        ("Unclaimed, handed back when built", Money(held["returned"])),
        ("Cash exchanges (changeur), standing", exchanged["count"]),
        ("Cash buy-ins (cash for chips)", Money(buy_ins)),
        ("Cash cash-outs (chips for cash)", Money(cash_outs)),
        ("Cash exchanged, net (buy-ins less cash-outs)", Money(exchanged["net"])),
        ("Cash exchanges voided", exchanged["voided"]),
        ("Patrons at or above the AML threshold", len(aml)),
        ("Tables flagged (banker's win rate outside 95%)", ", ".join(map(str, summary["flagged_tables"])) or "none"),
        ("Audit seal (SHA-256 over the day's stream heads)", seal),
        ("Sealed streams", len(streams)),
    ]  # a count is an int and an amount a Money: numbers in the XLSX, text as before elsewhere
    if register is not None:
        reg_rows = []
        for line in register.lines:
            for s in line["sessions"]:
                reg_rows.append([line["number"], s["number"], s["coups"], s["expected_cagnotte"], None, None])
            reg_rows.append([line["number"], None, sum(s["coups"] for s in line["sessions"]), line["expected"],
                             line["counted"], line["carried"]])  # fmt: skip
        sections.append(Section("control_register", "Control register (art. 72)", _cols(
            ("table", "Table", "int"), ("session", "Session (blank: table total)", "int"), ("coups", "Coups", "int"),
            ("expected", "Expected", "money"), ("counted", "Counted", "money"), ("carried", "Carried", "money"),
        ), _listed(reg_rows, tick), note=f"Total: {eur(register.total)}: {register.total_words_it} / "
                   f"{register.total_words_en}. A line with no session is its table's line, after its sessions': "
                   "the count of its box and the amount carried (the higher of expected and counted).",
            # The day's line under the tables' (the XLSX's; the note says it in the PDF and CSV).
            total=["Total", None, sum(s["coups"] for line in register.lines for s in line["sessions"]),
                   sum(line["expected"] for line in register.lines), sum(line["counted"] for line in register.lines),
                   register.total]))  # fmt: skip
        facts += [
            ("Control register total", Money(register.total)),
            ("In words (it)", register.total_words_it),
            ("In words (en)", register.total_words_en),
            ("Signed by", f"{_who(register.first_signer)} ({_when(register.first_signed_at)}), "
                          f"{_who(register.second_signer)} ({_when(register.second_signed_at)})"),
        ]  # fmt: skip
        if register.corrects_id is not None:
            facts.append(("Corrects", f"control register {register.corrects_id}: {register.reason}"))
        summary["register_total"] = register.total
        summary["register_words"] = {"it": register.total_words_it, "en": register.total_words_en}
    elif carried is not None:
        facts += [("Carried (higher of expected and counted, per table)", Money(carried)),
                  ("In words (it)", euros_it(carried)), ("In words (en)", euros_en(carried))]  # fmt: skip

    numbers = sorted(per_table)
    charts = [
        Chart("expected_cagnotte", "Expected cagnotte per table", [f"Table {n}" for n in numbers],
              [per_table[n]["expected_cagnotte"] for n in numbers], unit="cents"),
        Chart("coups", "Coups per table", [f"Table {n}" for n in numbers], [per_table[n]["coups"] for n in numbers]),
    ]  # fmt: skip
    rows = (
        len(table_rows) + len(session_rows) + len(count_rows) + len(deposit_rows) + len(cash_rows) + len(aml_rows)
        + (len(register.lines) + sum(len(line["sessions"]) for line in register.lines) if register else 0)
        + floor_selectors.day_interruption_rows(gaming_day_id=day_id).count()
        + floor_selectors.day_minimum_change_rows(gaming_day_id=day_id).count()
        + floor_selectors.day_staff_change_rows(gaming_day_id=day_id).count()
        + sum(rs.day_row_counts(gaming_day_id=day_id).values())
        + total["coups"] + 2 * total["annulled"]  # the coups section lists the annulled ones too
        + rs.bet_rows(gaming_day_id=day_id).count() + rs.patron_balance_rows(gaming_day_id=day_id).count()
        + total["non_conforming"]
    )
    document = ReportDocument(
        title=f"Chemin de Fer: end-of-day report, {day.date.isoformat()}",
        subtitle=f"{day.casino.name}, gaming day {day_id}, version {version}",
        facts=facts,
        sections=sections,
        charts=charts,
    )
    if hasattr(document, "created"):
        document.created = day.closed_at  # fixed by the day: a rebuild gives the same bytes
    return Built(document, summary, rows)
