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
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from audit.exports.document import Chart, Column, Money, ReportDocument, Section
from audit.exports.formatting import datetime_display, money_display, repeated_offset
from floor import selectors as floor_selectors
from tables import report_selectors as rs
from tables.engine.odds import exact_odds, recommended_strategy
from tables.wording import profile_title, version_text, violations_text

from . import cash, patrons, registers, unclaimed
from .ledger import UNUSED
from .words import euros_en, euros_it

if TYPE_CHECKING:
    from floor.models import GamingDay


def _when(at) -> str:
    """A moment in a sentence or a text cell (a fact, a note, a handover): the casino's wall
    clock to the second, "2026-12-03 18:19:23", with its UTC offset only in the hour the
    October change repeats (formatting.datetime_display), as the PDF's time columns read; not
    ISO's "2026-12-03T18:19:23+01:00", which the PDF's narrow cells broke in three."""
    return datetime_display(at)


def _limits_text(history) -> str:
    """Limits as the session line shows them, in the order they were in force:
    "100.00 EUR from 20:00; 150.00 EUR from 22:15" (local time; "02:15+02:00" in the hour the
    October change repeats); a maximum lifted says "none"."""
    return "; ".join(
        _("%(amount)s from %(time)s") % {
            "amount": pgettext("limit", "none") if item.amount is None else eur(item.amount),
            "time": f"{timezone.localtime(item.since):%H:%M}{repeated_offset(item.since)}",
        }
        for item in history
    )


def _who(user) -> str:
    """A member of staff as the report names every one it names: "Full Name (username)", the
    username alone when he has no name (the sessions register's words). The sections that
    stream their rows name staff the same way in SQL (floor.selectors.staff_said)."""
    full = user.get_full_name()
    return f"{full} ({user.get_username()})" if full else user.get_username()

CHUNK = 2000
Z95 = 1.96
PROSE = 70  # the XLSX width of a column of sentences (the violations, a coup's versions)
# Below this n·p0·(1-p0) the banker's win rate is checked against the exact binomial region.
EXACT_BELOW = 10
TAIL95 = Fraction(1, 40)  # 2.5%: each tail of the exact two-sided 95% region
EXACT, NORMAL = "exact binomial", "normal approximation"  # codes, as the summary keeps them


def _method_words(method: str | None) -> str:
    """A method code in the report's words ("" for none)."""
    if method == EXACT:
        return _("exact binomial")
    if method == NORMAL:
        return _("normal approximation")
    return method or ""

Tick = Callable[[], None]


def eur(cents: int | None) -> str:
    """An amount in a sentence of the report, in its language: "1,234.50 EUR", "1.234,50 EUR"."""
    if cents is None:
        return ""
    return f"{money_display(cents)} EUR"


@lru_cache(maxsize=64)
def _profile_said(code: str) -> str:
    """A table's rules profile in the report's language with its code, "Casinò di Venezia
    (venezia)": the title says which rules, the code is the CLI's and the README's name."""
    title = profile_title(code)
    return code if title == code else f"{title} ({code})"


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
            words = _method_words(method)
            parts.append(ngettext("%(method)s: table %(tables)s.", "%(method)s: tables %(tables)s.", len(numbers))
                         % {"method": words[:1].upper() + words[1:], "tables": ", ".join(numbers)})  # fmt: skip
    return " ".join(parts) or _("No table decided a coup.")


def _rule_words(name: str) -> str:
    words = {"regola_punta": _("punta alla Regola"), "regola_banker": _("banker alla Regola"),
             "banco_solo": _("banco solo")}  # fmt: skip
    return words.get(name, name)


def _rules_text(rules: dict[str, bool]) -> str:
    """The rules of the expectation in words: "punta alla Regola, banco solo"."""
    on = [_rule_words(name) for name, value in rules.items() if value]
    return ", ".join(on) if on else _("no Regola, bets for several")


def _code_words() -> dict[str, dict[str, str] | None]:
    """The words of the codes some columns hold (Column.labels), in the active language, by
    column: the PDF and the XLSX show them, the CSV keeps the codes. English keeps the codes
    everywhere, as before (a column whose words are its codes gets no labels)."""
    words = {
        "method": {EXACT: _("exact binomial"), NORMAL: _("normal approximation")},
        "winner": {"banker": pgettext("coup winner", "banker"), "punta": pgettext("coup winner", "punta"),
                   "tie": pgettext("coup winner", "tie")},
        "coup_state": {
            "betting": pgettext("coup state", "betting"), "closed": pgettext("coup state", "closed"),
            "dealing": pgettext("coup state", "dealing"), "pending": pgettext("coup state", "pending"),
            "settled": pgettext("coup state", "settled"), "annulled": pgettext("coup state", "annulled"),
        },
        "bank_origin": {
            "first": pgettext("bank origin", "first"), "continuation": pgettext("bank origin", "continuation"),
            "succession": pgettext("bank origin", "succession"), "auction": pgettext("bank origin", "auction"),
            "direct": pgettext("bank origin", "direct"),
        },
        "bank_end": {"lost": pgettext("bank end", "lost"), "withdrawn": pgettext("bank end", "withdrawn"),
                     "session_closed": pgettext("bank end", "session_closed")},
        "bet_kind": {"banco": pgettext("bet kind", "banco"), "avec_la_table": pgettext("bet kind", "avec_la_table"),
                     "individual": pgettext("bet kind", "individual")},
        "succession_reason": {"lost": pgettext("succession reason", "lost"),
                              "withdrawn": pgettext("succession reason", "withdrawn")},
        "succession_kind": {
            "rotation": pgettext("succession kind", "rotation"), "all_altezza": pgettext("succession kind", "all_altezza"),
            "equal_bank": pgettext("succession kind", "equal_bank"),
            "continuation": pgettext("succession kind", "continuation"),
        },
        "succession_status": {
            "offering": pgettext("succession status", "offering"), "unclaimed": pgettext("succession status", "unclaimed"),
            "auction": pgettext("succession status", "auction"), "taken": pgettext("succession status", "taken"),
            "lapsed": pgettext("succession status", "lapsed"),
        },
        "lapse_reason": {
            "nobody_accepted": pgettext("succession lapse", "nobody_accepted"),
            "no_bids": pgettext("succession lapse", "no_bids"),
            "no_valid_bids": pgettext("succession lapse", "no_valid_bids"),
            "bank_opened_directly": pgettext("succession lapse", "bank_opened_directly"),
            "session_closed": pgettext("succession lapse", "session_closed"),
        },
        "offer_round": {
            "new_bank": pgettext("offer round", "new_bank"), "seated": pgettext("offer round", "seated"),
            "standing": pgettext("offer round", "standing"), "claim": pgettext("offer round", "claim"),
            "height": pgettext("offer round", "height"), "minimum": pgettext("offer round", "minimum"),
        },
        "offer_status": {
            "pending": pgettext("offer status", "pending"), "accepted": pgettext("offer status", "accepted"),
            "claimed": pgettext("offer status", "claimed"), "passed": pgettext("offer status", "passed"),
            "skipped": pgettext("offer status", "skipped"),
        },
        "offer_skip": {
            "barred": pgettext("offer skip", "barred"), "left": pgettext("offer skip", "left"),
            "taken": pgettext("offer skip", "taken"), "outranked": pgettext("offer skip", "outranked"),
            "auction": pgettext("offer skip", "auction"), "lapsed": pgettext("offer skip", "lapsed"),
        },
        "auction_status": {"open": pgettext("auction status", "open"), "closed": pgettext("auction status", "closed")},
        "deposit_kind": {"stake": pgettext("deposit kind", "stake"), "winnings": pgettext("deposit kind", "winnings")},
        "cash_direction": {"buy_in": pgettext("cash direction", "buy_in"),
                           "cash_out": pgettext("cash direction", "cash_out")},
        "interrupted_as": {"commissario": pgettext("interrupted as", "commissario"),
                           "direzione": pgettext("interrupted as", "direzione")},
        # A voided card's reason: the settlement's own (a card the reconstruction left unused), in
        # words; a reason the Capo Partita typed stays as he typed it (a code without words).
        "void_reason": {UNUSED: pgettext("voided card", "unused by the reconstruction")},
        "drawer_state": {"in_force": pgettext("drawer count", "in_force"),
                         "corrected": pgettext("drawer count", "corrected"),
                         "not_counted": pgettext("drawer count", "not_counted")},
    }  # fmt: skip
    return {column: None if all(code == word for code, word in codes.items()) else codes
            for column, codes in words.items()}  # fmt: skip


def _sheet_names() -> dict[str, str]:
    """Each section's short title, the name of its XLSX sheet, in the active language. Its own
    words, not its title cut at Excel's 31 characters (which read "Offerte del banco, nell'",
    "Patrons at or above"): at most 26 characters, so that a continuation sheet's " (2)" to
    " (99)" fits too, unique in either language ignoring case, none of []:*?/\\."""
    # The context a literal, for xgettext. Translators: an Excel sheet name, at most 26
    # characters, none of []:*?/\, unique among them.
    return {
        "tables": pgettext("sheet name", "Tables"),
        "sessions": pgettext("sheet name", "Cagnotte register"),
        "interruptions": pgettext("sheet name", "Interruptions"),
        "minimum_changes": pgettext("sheet name", "Minimum & maximum changes"),
        "staff_changes": pgettext("sheet name", "Staff changes"),
        "shoes": pgettext("sheet name", "Shoes used"),
        "banks": pgettext("sheet name", "Bankers"),
        "coups": pgettext("sheet name", "Coups"),
        "annulled": pgettext("sheet name", "Coups annulled"),
        "bets": pgettext("sheet name", "Bets"),
        "patron_balances": pgettext("sheet name", "Patron balances"),
        "non_conforming": pgettext("sheet name", "Non-conforming coups"),
        "voided_cards": pgettext("sheet name", "Voided cards"),
        "faux_tirage_bars": pgettext("sheet name", "Faux-tirage bars (art. 60)"),
        "successions": pgettext("sheet name", "Successions of the bank"),
        "succession_offers": pgettext("sheet name", "Offers of the bank"),
        "auctions": pgettext("sheet name", "Auctions of the bank"),
        "auction_bids": pgettext("sheet name", "Bids at the asta"),
        "cagnotte_counts": pgettext("sheet name", "Cagnotte counts"),
        "unclaimed": pgettext("sheet name", "Unclaimed deposits"),
        "cash_exchanges": pgettext("sheet name", "Cash exchanges"),
        "cash_aml": pgettext("sheet name", "AML threshold patrons"),
        "cash_drawers": pgettext("sheet name", "Cash drawers"),
        "control_register": pgettext("sheet name", "Control register (art. 72)"),
    }


def _italian() -> bool:
    return (translation.get_language() or "en").split("-")[0] == "it"


def in_words(words_it: str, words_en: str) -> str:
    """The control register's total in words as a note says it: in Italian alone in an Italian
    report (art. 72's register is the casino's, in its language); "<it> / <en>" in English."""
    return words_it if _italian() else f"{words_it} / {words_en}"


def words_facts(words_it: str, words_en: str) -> list[tuple[str, str]]:
    """The total in words among the facts: in Italian alone in an Italian report, in both
    languages in an English one (the casino's words first)."""
    if _italian():
        return [(_("In words"), words_it)]
    return [("In words (it)", words_it), ("In words (en)", words_en)]


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


def _staff_change_row(change) -> tuple:
    """A staff change's line: who made it, the croupiers and changeurs as the sessions register
    names them (`_who`: name and username), as every section's "By"."""
    return (change.session.table.number, change.session.number, change.at, _who(change.by),
            _who(change.old_capo_partita), _who(change.new_capo_partita), _who(change.old_changeur),
            _who(change.new_changeur), change.reason)  # fmt: skip


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


def _line_tips(line: dict) -> int | None:
    """A control register line's tips, cents; None (a blank cell) when the line says none: its
    count recorded no tips, or the register was written before tips were (no key), as
    registers.register_tips reads them."""
    tips = line.get("tips")
    return tips if isinstance(tips, int) and not isinstance(tips, bool) else None


def _cols(*spec: tuple) -> list[Column]:
    """Columns from (key, title, kind) or (key, title, kind, XLSX width)."""
    return [Column(*column) for column in spec]


def build_document(
    *, day: GamingDay, version: int, seal: str, streams: list[str], register=None, counts=(), count_history=None,
    tick: Tick = lambda: None, language: str = "en",
) -> Built:
    """The report of a closed day. `register` is the signed control register a version >= 2
    includes; `counts` the cagnotte counts in force (CagnotteCount rows), which the figures
    use; `count_history` every count of the day, corrected ones included, which its section
    lists (nothing is edited: a correction is a new count; default: the counts in force).
    Given the history alone, the counts in force are those no other count corrects.

    `language` (the report's, DayReport.language) is the language of its words: its titles,
    notes and facts are made in it here, its rows' words as the writers read them (the
    document carries it, and they write under it). Keys, codes and the summary are the same
    in every language."""
    with translation.override(language):
        built = _build_document(day=day, version=version, seal=seal, streams=streams, register=register,
                                counts=counts, count_history=count_history, tick=tick)  # fmt: skip
    built.document.language = language
    return built


def _build_document(
    *, day: GamingDay, version: int, seal: str, streams: list[str], register, counts, count_history, tick: Tick,
) -> Built:
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
            t.number, _profile_said(t.profile), t.decks, sum(1 for s in sessions if s.table_id == table_id), f["coups"],
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
        # The tips (mance) counted with the boxes in force: the staff's, in no house figure.
        "tips": sum(tips) if (tips := [c.tips for c in counts.values() if c.tips is not None]) else None,
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

    codes = _code_words()

    def nonconf(row):
        # In words, as the tablet says them (tables.wording), in the report's language (the
        # writers read the rows under it); the cards by their codes, as the cards column prints them.
        (t, s, n, cards, pd, bd, rp, rb, violations, as_played, settled, next_cards, winner, levy) = row
        return [t, s, n, " ".join(cards or ()), pd, bd, rp, rb, violations_text(violations),
                version_text(as_played), version_text(settled), " ".join(next_cards or ()), winner, levy]  # fmt: skip

    # Not formats, though xgettext would take "% lo" and "% hi" for them (and makemessages
    # then flag the Italian, which has none, as a fuzzy guess):
    # xgettext:no-python-format
    low95 = _("95% low")
    # xgettext:no-python-format
    high95 = _("95% high")
    sections: list[Section] = [
        Section("tables", _("Tables: figures of the day and the banker's win rate"), _cols(
            ("table", _("Table"), "int"), ("profile", _("Profile"), "text"), ("decks", _("Decks"), "int"),
            ("sessions", _("Sessions"), "int"), ("coups", _("Coups"), "int"), ("annulled", pgettext("report count", "Annulled"), "int"),
            ("banker_wins", _("Banker wins"), "int"),
            ("punta_wins", _("Punta wins"), "int"), ("ties", _("Ties"), "int"), ("decided", _("Decided"), "int"),
            ("win_rate", _("Banker win rate"), "rate"), ("expected", _("Expected (exact)"), "rate"),
            ("low", low95, "rate"), ("high", high95, "rate"), ("method", _("95% method"), "text", None, codes["method"]),
            ("rules", _("Rules of the expectation"), "text"),
            ("flagged", _("Outside 95%"), "bool"), ("non_conforming", _("Non-conforming"), "int"),
            ("levies", _("Levies recorded"), "money"), ("expected_cagnotte", _("Expected cagnotte"), "money"),
            ("counted", _("Counted cagnotte"), "money"), ("carried", _("Carried"), "money"),
        ), _listed(table_rows, tick), note=_("Expected rate: exact odds of the table's profile and decks, the "
                   "profile's recommended strategy, under the rules most used at the table; ties excluded. 95% "
                   "interval: the normal approximation p0 ± 1.96·sqrt(p0(1-p0)/n) when n·p0·(1-p0) >= 10 (n decided "
                   "coups), else the exact binomial acceptance region, each tail at most 2.5%.")
                   + " " + _methods_text(per_table)),
        Section("sessions", _("Cagnotte register: sessions (art. 70)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("opened_at", _("Opened"), "datetime"),
            ("closed_at", _("Closed"), "datetime"), ("capo_partita", _("Croupiers (in turn)"), "text"),
            ("changeur", _("Changeurs (in turn)"), "text"), ("shoe_number", _("Shoe (at opening)"), "text"),
            ("minimums", _("Minimum (each in force from)"), "text"), ("maximums", _("Maximum (each in force from)"), "text"),
            ("coups", _("Coups"), "int"), ("annulled", pgettext("report count", "Annulled"), "int"), ("banker_wins", _("Banker wins"), "int"),
            ("levies", _("Levies recorded"), "money"), ("expected_cagnotte", _("Expected cagnotte"), "money"),
        ), _listed(session_rows, tick), note=_("Minimum and maximum: the limits at the opening, then each change "
                   "with its time (local); the changes' section below says who made them and why. A blank maximum: "
                   "none.")),
        Section("interruptions", _("Interruptions and resumptions"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("interrupted_at", _("Interrupted"), "datetime"),
            ("interrupted_by", _("Interrupted by"), "text"),
            ("interrupted_as", _("As (whose suspension)"), "text", None, codes["interrupted_as"]),
            ("reason", _("Reason"), "text"), ("resumed_at", _("Resumed"), "datetime"),
            ("resumed_by", _("Resumed by"), "text"), ("resume_reason", _("Reason for resuming"), "text"),
        ), _streamed(floor_selectors.day_interruption_rows(gaming_day_id=day_id, named=True), tick)),
        Section("minimum_changes", _("Minimum and maximum changes"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("at", _("At"), "datetime"), ("by", _("By"), "text"),
            ("old", _("Old minimum"), "money"), ("new", _("New minimum"), "money"),
            ("old_maximum", _("Old maximum"), "money"), ("new_maximum", _("New maximum"), "money"), ("reason", _("Reason"), "text"),
        ), _streamed(floor_selectors.day_minimum_change_rows(gaming_day_id=day_id), tick),
            note=_("A blank maximum: the table had none. A change of the minimum alone shows the maximum "
                   "unchanged.")),
        Section("staff_changes", _("Staff changes (the croupiers' relief)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("at", _("At"), "datetime"), ("by", _("By"), "text"),
            ("old_capo_partita", _("Croupier before"), "text"), ("new_capo_partita", _("Croupier after"), "text"),
            ("old_changeur", _("Changeur before"), "text"), ("new_changeur", _("Changeur after"), "text"),
            ("reason", _("Reason"), "text"),
        ), _streamed(floor_selectors.day_staff_change_rows(gaming_day_id=day_id), tick, _staff_change_row)),
        Section("shoes", _("Shoes used"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("shoe", _("Shoe"), "int"),
            ("number", _("Number"), "text"), ("decks", _("Decks"), "int"), ("loaded_at", _("Loaded"), "datetime"),
            ("loaded_by", _("By"), "text"), ("finished_at", _("Finished"), "datetime"), ("cards_out", _("Cards out"), "int"),
            ("voided", _("Voided"), "int"),
        ), _streamed(rs.shoe_rows(gaming_day_id=day_id, named=True), tick)),
        Section("banks", _("Bankers: each bank described separately (art. 71)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("bank", _("Bank"), "int"),
            ("banker", _("Banker"), "text"), ("origin", _("Origin"), "text", None, codes["bank_origin"]), ("opened_at", pgettext("bank", "Opened"), "datetime"),
            ("ended_at", pgettext("bank", "Ended"), "datetime"), ("end_reason", _("End"), "text", None, codes["bank_end"]), ("initial", _("Initial bank"), "money"),
            ("raised", _("Put up since"), "money"), ("amount", _("Last bank"), "money"), ("coups", _("Coups"), "int"), ("banker_wins", _("Won"), "int"),
            ("covered", _("Covered"), "money"), ("levies", _("Levies"), "money"), ("banker_net", _("Banker net"), "money"),
        ), _streamed(rs.bank_rows(gaming_day_id=day_id), tick)),
        Section("coups", _("Coups: the levy of every coup (art. 56-1)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("coup", _("Coup"), "int"), ("bank", _("Bank"), "int"),
            ("banker", _("Banker"), "text"), ("at", _("Settled"), "datetime"), ("bank_amount", _("Bank amount"), "money"),
            ("covered", _("Pot (covered)"), "money"), ("banco_solo", _("Banco solo"), "bool"),
            ("regola_punta", _("Punta Regola"), "bool"), ("regola_banker", _("Banker Regola"), "bool"),
            ("winner", _("Winner"), "text", None, codes["winner"]), ("natural", _("Natural"), "bool"), ("levy", _("Levy"), "money"),
            ("paid", _("Paid to winner"), "money"), ("conforming", _("Conforming"), "bool"), ("state", _("State"), "text", None, codes["coup_state"]),
        ), _streamed(rs.coup_rows(gaming_day_id=day_id), tick)),
        Section("annulled", _("Coups annulled (no money moved, the bets went back)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("coup", _("Coup"), "int"),
            ("annulled_at", _("Annulled"), "datetime"), ("annulled_by", _("By"), "text"), ("reason", _("Reason"), "text"),
            ("cards", _("Cards out of the shoe"), "text"),
            ("bets", _("Bets returned"), "int"), ("bets_total", _("Their total"), "money"),
        ), _streamed(rs.annulled_rows(gaming_day_id=day_id), tick, _annulled_row)),
        Section("bets", _("Bets and what each paid or was paid"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("coup", _("Coup"), "int"),
            ("order", _("Order"), "int"), ("patron", _("Patron"), "text"), ("seat", _("Seat"), "int"),
            ("standing", _("Standing"), "bool"), ("kind", _("Kind"), "text", None, codes["bet_kind"]), ("amount", pgettext("report column", "Bet"), "money"),
            ("carried_from", _("Carried from coup"), "int"), ("winner", _("Winner"), "text", None, codes["winner"]),
            ("result", _("Won (+) / lost (-)"), "money"),
        ), _streamed(rs.bet_rows(gaming_day_id=day_id), tick)),
        Section("patron_balances", _("Each patron's balance per session"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("patron_id", _("Patron no."), "int"),
            ("patron", _("Patron"), "text"), ("coups", _("Coups"), "int"), ("won", _("Received"), "money"),
            ("lost", _("Paid"), "money"), ("balance", _("Balance"), "money"),
        ), _streamed(rs.patron_balance_rows(gaming_day_id=day_id), tick)),
        Section("non_conforming", _("Non-conforming coups: as played and reconstructed (RULES.md §3.3)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("coup", _("Coup"), "int"),
            ("cards", _("Cards as played"), "text"), ("punta_draws", _("Punta drew"), "bool"),
            ("banker_draws", _("Banker drew"), "bool"), ("regola_punta", _("Punta Regola"), "bool"),
            ("regola_banker", _("Banker Regola"), "bool"), ("violations", _("Violations"), "text", PROSE),
            ("as_played", _("As played"), "text", PROSE), ("reconstruction", _("Reconstruction (settled)"), "text", PROSE),
            ("next_cards", _("Shoe cards drawn for it"), "text"), ("winner", _("Winner"), "text", None, codes["winner"]), ("levy", _("Levy"), "money"),
        ), _streamed(rs.non_conforming_rows(gaming_day_id=day_id), tick, nonconf)),
        Section("voided_cards", _("Voided cards"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("shoe", _("Shoe"), "int"),
            ("shoe_number", _("Shoe number"), "text"), ("position", _("Position"), "int"), ("card", _("Card"), "text"),
            ("reason", _("Reason"), "text", None, codes["void_reason"]), ("at", _("At"), "datetime"),
            ("by", _("By"), "text"),
        ), _streamed(rs.voided_card_rows(gaming_day_id=day_id), tick)),
        Section("faux_tirage_bars", _("Faux-tirage bars (art. 60)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("patron", _("Patron"), "text"),
            ("coup", _("Coup"), "int"), ("reason", _("Reason"), "text"), ("at", _("At"), "datetime"), ("by", _("By"), "text"),
        ), _streamed(rs.faux_tirage_bar_rows(gaming_day_id=day_id), tick)),
        Section("successions", _("Successions of the bank (RULES.md §5)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("succession", _("Succession"), "int"),
            ("started_at", _("Started"), "datetime"), ("outgoing", _("Outgoing banker"), "text"), ("reason", _("Why"), "text", None, codes["succession_reason"]),
            ("kind", _("Offered as"), "text", None, codes["succession_kind"]), ("amount", _("Bank offered"), "money"), ("floor", _("Continuation"), "money"),
            ("minimum", _("Minimum"), "money"), ("status", _("Outcome"), "text", None, codes["succession_status"]), ("lapse_reason", _("Lapsed because"), "text", None, codes["lapse_reason"]),
            ("successor", _("New banker"), "text"), ("new_bank", _("New bank"), "money"), ("origin", _("By way of"), "text", None, codes["bank_origin"]),
            ("ended_at", _("Ended"), "datetime"), ("ended_by", _("By"), "text"),
        ), _streamed(rs.succession_rows(gaming_day_id=day_id), tick),
            # The cells hold the codes (the same in every language): the note says what each means.
            note=_("Outcome: taken, lapsed, or still offering/unclaimed/at auction when the day was built. By way "
                   "of: succession (an offer in turn), auction (the asta), direct (entered by the Capo Partita).")),
        Section("succession_offers", _("Offers of the bank, in the order of the right to it"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("succession", _("Succession"), "int"),
            ("order", _("Order"), "int"), ("round", _("Round"), "text", None, codes["offer_round"]), ("patron", _("Player"), "text"), ("seat", _("Seat"), "int"),
            ("amount_min", _("From"), "money"), ("amount_max", _("Up to"), "money"), ("status", _("Answer"), "text", None, codes["offer_status"]),
            ("reason", _("Skipped because"), "text", None, codes["offer_skip"]), ("amount", _("Amount"), "money"), ("answered_at", _("Answered"), "datetime"),
            ("answered_by", _("Entered by"), "text"),
        ), _streamed(rs.succession_offer_rows(gaming_day_id=day_id), tick),
            # A blank cell said nothing: the offer had no maximum (none of its own, and the
            # table none when it was answered: tables.services.succession._in_force).
            note=_("A blank 'Up to': no maximum.")),
        Section("auctions", _("Auctions of the bank (asta, RULES.md §5)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("succession", _("Succession"), "int"),
            ("status", _("Status"), "text", None, codes["auction_status"]), ("opened_at", _("Opened"), "datetime"), ("opened_by", _("Opened by"), "text"),
            ("closed_at", _("Closed"), "datetime"), ("closed_by", _("Closed by"), "text"), ("bids", _("Bids"), "int"),
            ("winner", _("Winner"), "text"), ("winning_bid", _("Winning bid"), "money"),
        ), _streamed(rs.auction_rows(gaming_day_id=day_id), tick)),
        Section("auction_bids", _("Bids at the asta, in their order"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("succession", _("Succession"), "int"),
            ("seq", _("Order"), "int"), ("patron", _("Bidder"), "text"), ("seat", _("Seat"), "int"),
            ("standing", _("Standing"), "bool"), ("amount", pgettext("report column", "Bid"), "money"), ("at", _("At"), "datetime"),
            ("by", _("Entered by"), "text"), ("won", _("Won"), "bool"),
        ), _streamed(rs.bid_rows(gaming_day_id=day_id), tick)),
    ]
    listed = list(counts.values()) if count_history is None else list(count_history)
    corrected = {c.corrects_id: c.pk for c in listed if c.corrects_id is not None}
    count_rows = [
        [c.pk, tables[c.table_id].number, c.expected, c.counted, c.surplus, c.shortfall, c.carried, c.tips,
         _who(c.counted_by), _who(c.witness), c.counted_at, c.corrects_id, corrected.get(c.pk),
         c.note]
        for c in sorted(listed, key=lambda c: (tables[c.table_id].number, c.counted_at, c.pk))
    ]  # fmt: skip
    sections.append(Section("cagnotte_counts", _("Cagnotte counts (art. 70; a corrected count stays, with its correction)"), _cols(
        ("count", _("Count"), "int"),
        ("table", _("Table"), "int"), ("expected", _("Expected"), "money"), ("counted", _("Counted"), "money"),
        ("surplus", _("Surplus (extra levy)"), "money"), ("shortfall", _("Shortfall (borne by the casino)"), "money"),
        ("carried", _("Carried"), "money"), ("tips", _("Tips (staff's)"), "money"),
        ("counted_by", _("Counted by"), "text"), ("witness", _("Witness"), "text"),
        ("counted_at", _("At"), "datetime"), ("corrects", _("Corrects count"), "int"),
        ("corrected_by", _("Corrected by count"), "int"), ("note", _("Note"), "text"),
    ), _listed(count_rows, tick), note="" if counted_all else _("Not every table is counted yet.")))  # fmt: skip
    # Each count listed as its event records it: verification holds them to it (`count_mismatch`).
    summary["counts_as_listed"] = {str(c.pk): registers.count_payload(c) for c in listed}

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
         _who(d.recorded_by), d.recorded_at, d.returned_to or None,
         None if d.returned_by is None else _who(d.returned_by), d.returned_at, d.returned_note]
        for d in deposits
    ]  # fmt: skip
    sections.append(Section("unclaimed", _("Unclaimed stakes and winnings (RULES.md §6)"), _cols(
        ("deposit", _("Deposit"), "int"), ("table", _("Table"), "int"), ("session", _("Session"), "int"),
        ("coup", _("Coup"), "int"), ("patron", _("Patron"), "text"), ("kind", _("Kind"), "text", None, codes["deposit_kind"]),
        ("amount", _("Amount"), "money"), ("deposited_in", _("Deposited in"), "text"), ("note", _("Note"), "text"),
        ("recorded_by", _("Recorded by"), "text"), ("recorded_at", _("Recorded at"), "datetime"),
        ("returned_to", _("Handed back to"), "text"), ("returned_by", _("Handed back by"), "text"),
        ("returned_at", _("Handed back at"), "datetime"), ("returned_note", _("Return note"), "text"),
    ), _listed(deposit_rows, tick), note=(
        _("Collected by the Commissario and deposited: %(count)s, %(total)s (stakes %(stakes)s, winnings "
          "%(winnings)s); outstanding %(outstanding)s, handed back %(returned)s. As the books stood when this "
          "version was built: a deposit handed back since shows here as outstanding.")
        % {"count": held["count"], "total": eur(held["total"]), "stakes": eur(held["stakes"]),
           "winnings": eur(held["winnings"]), "outstanding": eur(held["outstanding"]),
           "returned": eur(held["returned"])}
        if deposits else _("No unclaimed stake or winnings was deposited on this day.")
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
         None if x.patron is None else x.patron.full_name, x.identification_required, _who(x.by),
         x.voided_at, None if x.voided_by is None else _who(x.voided_by), x.void_reason]
        for x in exchanges
    ]  # fmt: skip
    sections.append(Section("cash_exchanges", _("Cash exchanged at the tables (changeur)"), _cols(
        ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("line", _("Line"), "int"), ("at", _("At"), "datetime"),
        ("direction", _("Direction"), "text", None, codes["cash_direction"]), ("amount", _("Amount"), "money"), ("patron", _("Patron"), "text"),
        ("identification_required", _("Identification required"), "bool"), ("by", _("Recorded by"), "text"),
        ("voided_at", _("Voided at"), "datetime"), ("voided_by", _("Voided by"), "text"),
        ("void_reason", _("Void reason"), "text"),
    ), _listed(cash_rows, tick), note=(
        _("Exchanges standing: %(count)s; buy-ins (cash for chips) %(buy_ins)s, cash-outs (chips for cash) "
          "%(cash_outs)s, net %(net)s; voided: %(voided)s (listed, not in the totals).")
        % {"count": exchanged["count"], "buy_ins": eur(buy_ins), "cash_outs": eur(cash_outs),
           "net": eur(exchanged["net"]), "voided": exchanged["voided"]}
        if exchanges else _("No cash was exchanged at the tables on this day.")
    )))  # fmt: skip
    aml_rows = [[line["patron"], line["name"], line["total"], line["count"]] for line in aml]
    sections.append(Section("cash_aml", _("Patrons at or above the identification threshold (AML)"), _cols(
        ("patron_id", _("Patron no."), "int"), ("patron", _("Patron"), "text"), ("total", _("Exchanged in the day"), "money"),
        ("exchanges", _("Exchanges"), "int"),
    ), _listed(aml_rows, tick), note=(
        _("Threshold %(threshold)s (AML_IDENTIFY_CENTS): each named patron's exchanges of the gaming day, at every "
          "table and session, buy-ins and cash-outs together, voided lines left out.") % {"threshold": eur(threshold)}
        + " " + (_("Patrons at or above it: %(count)s.") % {"count": len(aml)} if aml else _("No patron reached it."))
    )))  # fmt: skip

    # Each patron the day's rows refer to, as the report names him (a digest per identity field)
    # with the patrons stream's head: verification holds them to the identity the trail
    # registered as of the build (`patron_mismatch`).
    named = rs.day_named_patron_ids(gaming_day_id=day_id, also=unclaimed.day_deposit_patron_ids(gaming_day_id=day_id))
    summary["patrons"] = patrons.named(named)

    # Each session's cash drawer, counted against its register (tables.services.cash_count):
    # every count, a corrected one with its correction; a session closed without a count is
    # named, never read as a zero.
    net_by_session: dict[int, int] = {}
    for x in standing:
        net_by_session[x.session_id] = net_by_session.get(x.session_id, 0) + (
            x.amount if x.direction == x.Direction.BUY_IN else -x.amount
        )
    drawer_counts = list(cash.day_cash_counts(gaming_day_id=day_id))
    superseded_by = {c.corrects_id: c.pk for c in drawer_counts if c.corrects_id is not None}
    counts_by_session: dict[int, list] = {}
    for c in drawer_counts:
        counts_by_session.setdefault(c.session_id, []).append(c)
    # A changeur's handover count (its staff change set) is its own row, with the changeur relieved
    # and the handover's time (blank for a final count): one text column, not two, as the PDF's
    # page holds one more column at its smallest type and not two (the width tests set every
    # figure at its largest); the totals, the session's "counted"
    # and the sessions not counted are the final counts' (each the whole session's drawer), the
    # handovers' apart: a handover's difference is part of the final one, never added to it.
    drawer_rows, not_counted, in_force, handovers_in_force, handovers_not_counted = [], [], [], [], []
    for s in sessions:
        listed_counts = counts_by_session.get(s.pk, [])
        for c in listed_counts:
            state = "corrected" if c.pk in superseded_by else "in_force"
            if state == "in_force":
                (in_force if c.staff_change_id is None else handovers_in_force).append(c)
            change = c.staff_change
            # The chips' cells blank (None, never 0) for a count that did not count them.
            handover = "" if change is None else _("%(changeur)s, relieved at %(at)s") % {
                "changeur": _who(change.old_changeur), "at": _when(change.at)}
            drawer_rows.append([s.table.number, s.number, c.pk, handover, c.float_issued, c.net,
                                c.expected, c.counted, c.difference, c.chips_float, c.chips_expected,
                                c.chips_counted, c.chips_difference, _who(c.counted_by), c.counted_at, state,
                                c.corrects_id, superseded_by.get(c.pk), c.note])  # fmt: skip
        # A changeur relieved whose drawer no count holds: its own row, not counted, with the
        # register's net up to the handover (the lines standing at the build, as the count's).
        counted_changes = {c.staff_change_id for c in listed_counts}
        for change in reliefs.get(s.pk, []):
            if change.old_changeur_id == change.new_changeur_id or change.pk in counted_changes:
                continue
            handovers_not_counted.append((s, change))
            net = sum((x.amount if x.direction == x.Direction.BUY_IN else -x.amount)
                      for x in standing if x.session_id == s.pk and x.at <= change.at)  # fmt: skip
            drawer_rows.append([s.table.number, s.number, None, _("%(changeur)s, relieved at %(at)s") % {
                "changeur": _who(change.old_changeur), "at": _when(change.at)}, None, net, None, None, None, None,
                None, None, None, None, None, "not_counted", None, None, ""])  # fmt: skip
        if not any(c.staff_change_id is None for c in listed_counts):
            not_counted.append(s)
            drawer_rows.append([s.table.number, s.number, None, "", None, net_by_session.get(s.pk, 0), None,
                                None, None, None, None, None, None, None, None, "not_counted", None, None,
                                ""])  # fmt: skip
    drawer_difference = sum(c.difference for c in in_force) if in_force else None
    handover_difference = sum(c.difference for c in handovers_in_force) if handovers_in_force else None
    # The chips' difference over the counts in force that counted them; None when none did (a
    # tray not counted is not a tray found exact).
    chips_in_force = [c for c in in_force if c.chips_difference is not None]
    chips_difference = sum(c.chips_difference for c in chips_in_force) if chips_in_force else None
    not_counted_words = ", ".join(
        _("table %(table)s session %(session)s") % {"table": s.table.number, "session": s.number} for s in not_counted
    )
    # Each count listed, as its payload's digest: verification holds the rows the report printed
    # to their events as of the build (`drawer_mismatch`): the session's stream's, or the day's
    # books stream's for a drawer counted after the close (tables.services.cash_count).
    summary["drawers"] = {
        "counted": len(in_force), "difference": drawer_difference,
        "surplus": sum(c.difference for c in in_force if c.difference > 0),
        "shortfall": -sum(c.difference for c in in_force if c.difference < 0),
        "chips_counted": len(chips_in_force), "chips_difference": chips_difference,
        "not_counted": [{"table": s.table.number, "session": s.number} for s in not_counted],
        "handovers_counted": len(handovers_in_force), "handover_difference": handover_difference,
        "handovers_not_counted": [{"table": s.table.number, "session": s.number, "staff_change": change.pk}
                                  for s, change in handovers_not_counted],
        "as_recorded": {str(c.pk): unclaimed.payload_digest(rs.cash_count_payload(c)) for c in drawer_counts},
    }  # fmt: skip
    sections.append(Section("cash_drawers", _("Cash drawers counted at the end of each session"), _cols(
        ("table", _("Table"), "int"), ("session", _("Session"), "int"), ("count", _("Count"), "int"),
        ("handover", _("Changeur relieved at the handover"), "text"),
        ("float_issued", _("Float issued"), "money"), ("net", _("Register's net"), "money"),
        ("expected", pgettext("drawer", "Expected"), "money"), ("counted", pgettext("drawer", "Counted"), "money"),
        ("difference", _("Difference (counted less expected)"), "money"),
        ("chips_float", _("Chips float"), "money"), ("chips_expected", _("Chips expected"), "money"),
        ("chips_counted", _("Chips counted"), "money"),
        ("chips_difference", _("Chips difference"), "money"),
        ("counted_by", _("Counted by"), "text"),
        ("counted_at", _("At"), "datetime"), ("state", _("State"), "text", None, codes["drawer_state"]),
        ("corrects", _("Corrects count"), "int"), ("corrected_by", _("Corrected by count"), "int"),
        ("note", _("Note (a correction's reason)"), "text"),
    ), _listed(drawer_rows, tick), note=(
        _("Expected: the float issued plus the register's net cash taken (voided lines left out); difference: "
          "counted less expected (a surplus above 0, a shortfall below). The chips mirror the cash: expected, "
          "the chips' float less the register's net (the chips handed out for the cash taken); blank when the "
          "chips were not counted. A corrected count stays, with its correction.") + " " + (
            _("Counts in force: %(count)s, difference %(difference)s.")
            % {"count": len(in_force), "difference": eur(drawer_difference)} if in_force else
            _("No drawer was counted.")
        ) + (
            " " + _("Chips counted in %(count)s of them, difference %(difference)s.")
            % {"count": len(chips_in_force), "difference": eur(chips_difference)} if chips_in_force else ""
        ) + (
            " " + _("A changeur relieved during the session handed his drawer over counted: its row gives the "
                    "handover's time and the changeur relieved, its register's net the lines up to the handover; "
                    "the final count holds the whole session. Handovers counted: %(count)s, difference "
                    "%(difference)s (part of the final counts', not added to them).")
            % {"count": len(handovers_in_force), "difference": eur(handover_difference)}
            if handovers_in_force else ""
        ) + (
            " " + _("Changeurs' handovers not counted: %(handovers)s.") % {"handovers": ", ".join(
                _("table %(table)s session %(session)s, %(changeur)s at %(at)s") % {
                    "table": s.table.number, "session": s.number, "changeur": _who(change.old_changeur),
                    "at": _when(change.at)} for s, change in handovers_not_counted)}
            if handovers_not_counted else ""
        ) + " " + (
            _("Sessions closed without a drawer count: %(sessions)s.") % {"sessions": not_counted_words}
            if not_counted else _("Every session's drawer was counted.")
        )
    )))  # fmt: skip

    facts = [
        (_("Gaming day"), f"{day.date.isoformat()} ({day.casino.name})"),
        (_("Report version"), version),
        (_("Opened"), _when(day.opened_at)),
        (_("Closed"), _when(day.closed_at) if day.closed_at else ""),
        (_("Sessions"), len(sessions)),
        (_("Coups"), total["coups"]),
        (_("Coups annulled"), total["annulled"]),
        (_("Levies recorded"), Money(total["levies_recorded"])),
        (_("Expected cagnotte (sum of the house postings)"), Money(total["expected_cagnotte"])),
        (_("Counted cagnotte"), Money(summary["counted"]) if counted_all else _("not counted yet")),
        (_("Tips (mance) counted, the staff's: not in the cagnotte"),
         pgettext("tips", "not counted") if summary["tips"] is None else Money(summary["tips"])),
        (_("Unclaimed stakes and winnings deposited"), held["count"]),
        (_("Unclaimed stakes"), Money(held["stakes"])),
        (_("Unclaimed winnings"), Money(held["winnings"])),
        (_("Unclaimed, outstanding when built"), Money(held["outstanding"])),
        (_("Unclaimed, handed back when built"), Money(held["returned"])),
        (_("Cash exchanges (changeur), standing"), exchanged["count"]),
        (_("Cash buy-ins (cash for chips)"), Money(buy_ins)),
        (_("Cash cash-outs (chips for cash)"), Money(cash_outs)),
        (_("Cash exchanged, net (buy-ins less cash-outs)"), Money(exchanged["net"])),
        (_("Cash exchanges voided"), exchanged["voided"]),
        (_("Patrons at or above the AML threshold"), len(aml)),
        (_("Cash drawers counted"), len(in_force)),
        (_("Cash drawers' difference (counted less expected, counts in force)"),
         pgettext("drawer", "not counted") if drawer_difference is None else Money(drawer_difference)),
        (_("Chips' difference in the drawers (counted less expected, counts in force that counted chips)"),
         pgettext("drawer", "not counted") if chips_difference is None else Money(chips_difference)),
        (_("Sessions closed without a drawer count"),
         not_counted_words or pgettext("sessions not counted", "none")),
        (_("Changeurs' handovers counted"), len(handovers_in_force)),
        (_("Changeurs' handovers' difference (counted less expected, counts in force)"),
         pgettext("drawer", "not counted") if handover_difference is None else Money(handover_difference)),
        (_("Tables flagged (banker's win rate outside 95%)"), ", ".join(map(str, summary["flagged_tables"])) or pgettext("tables flagged", "none")),
        (_("Audit seal (SHA-256 over the day's stream heads)"), seal),
        (_("Sealed streams"), len(streams)),
    ]  # a count is an int and an amount a Money: numbers in the XLSX, text as before elsewhere
    if register is not None:
        # Each table's line carries its tips (the mance, RULES.md §6) when its count recorded
        # them: the staff's, beside the cagnotte and never in its total. A line without them (not
        # counted, or a register written before tips were recorded: no key at all) is a blank
        # cell, as in the counts' section; the sessions' lines have none (one box per table).
        reg_rows = []
        for line in register.lines:
            for s in line["sessions"]:
                reg_rows.append([line["number"], s["number"], s["coups"], s["expected_cagnotte"], None, None, None])
            reg_rows.append([line["number"], None, sum(s["coups"] for s in line["sessions"]), line["expected"],
                             line["counted"], line["carried"], _line_tips(line)])  # fmt: skip
        tips_total = register.tips_total
        tips_said = pgettext("tips", "not counted") if tips_total is None else eur(tips_total)
        sections.append(Section("control_register", _("Control register (art. 72)"), _cols(
            ("table", _("Table"), "int"), ("session", _("Session (blank: table total)"), "int"), ("coups", _("Coups"), "int"),
            ("expected", _("Expected"), "money"), ("counted", _("Counted"), "money"), ("carried", _("Carried"), "money"),
            ("tips", _("Tips (staff's)"), "money"),
        ), _listed(reg_rows, tick), note=_("Total: %(amount)s: %(words)s. Tips (mance), the staff's, apart from the "
                   "total: %(tips)s (a blank tips cell: not counted). A line with no session is its table's "
                   "line, after its sessions': the count of its box and the amount carried (the higher of expected "
                   "and counted).") % {"amount": eur(register.total), "words": in_words(register.total_words_it,
                                                                                       register.total_words_en),
                                       "tips": tips_said},
            # The day's line under the tables' (the XLSX's; the note says it in the PDF and CSV).
            total=[_("Total"), None, sum(s["coups"] for line in register.lines for s in line["sessions"]),
                   sum(line["expected"] for line in register.lines), sum(line["counted"] for line in register.lines),
                   register.total, register.tips_total]))  # fmt: skip
        facts += [
            (_("Control register total"), Money(register.total)),
            *words_facts(register.total_words_it, register.total_words_en),
            (_("Signed by"), f"{_who(register.first_signer)} ({_when(register.first_signed_at)}), "
                             f"{_who(register.second_signer)} ({_when(register.second_signed_at)})"),
        ]  # fmt: skip
        if register.tips_total is not None:  # (not on a register written before tips were recorded)
            facts.append((_("Control register tips (mance), apart from its total"), Money(register.tips_total)))
        if register.corrects_id is not None:
            facts.append((_("Corrects"), _("control register %(register)s: %(reason)s")
                          % {"register": register.corrects_id, "reason": register.reason}))  # fmt: skip
        summary["register_total"] = register.total
        summary["register_words"] = {"it": register.total_words_it, "en": register.total_words_en}
    elif carried is not None:
        facts += [(_("Carried (higher of expected and counted, per table)"), Money(carried)),
                  *words_facts(euros_it(carried), euros_en(carried))]  # fmt: skip

    numbers = sorted(per_table)
    charts = [
        Chart("expected_cagnotte", _("Expected cagnotte per table"), [_("Table %(n)s") % {"n": n} for n in numbers],
              [per_table[n]["expected_cagnotte"] for n in numbers], unit="cents"),
        Chart("coups", _("Coups per table"), [_("Table %(n)s") % {"n": n} for n in numbers],
              [per_table[n]["coups"] for n in numbers]),
    ]  # fmt: skip
    rows = (
        len(table_rows) + len(session_rows) + len(count_rows) + len(deposit_rows) + len(cash_rows) + len(aml_rows)
        + len(drawer_rows)
        + (len(register.lines) + sum(len(line["sessions"]) for line in register.lines) if register else 0)
        + floor_selectors.day_interruption_rows(gaming_day_id=day_id).count()
        + floor_selectors.day_minimum_change_rows(gaming_day_id=day_id).count()
        + floor_selectors.day_staff_change_rows(gaming_day_id=day_id).count()
        + sum(rs.day_row_counts(gaming_day_id=day_id).values())
        + total["coups"] + 2 * total["annulled"]  # the coups section lists the annulled ones too
        + rs.bet_rows(gaming_day_id=day_id).count() + rs.patron_balance_rows(gaming_day_id=day_id).count()
        + total["non_conforming"]
    )
    sheets = _sheet_names()
    for section in sections:
        section.sheet = sheets[section.key]  # every section has its own (KeyError: a new one without)
    document = ReportDocument(
        title=_("Chemin de Fer: end-of-day report, %(date)s") % {"date": day.date.isoformat()},
        subtitle=_("%(casino)s, gaming day %(day)s, version %(version)s")
        % {"casino": day.casino.name, "day": day_id, "version": version},
        facts=facts,
        sections=sections,
        charts=charts,
    )
    if hasattr(document, "created"):
        document.created = day.closed_at  # fixed by the day: a rebuild gives the same bytes
    return Built(document, summary, rows)
