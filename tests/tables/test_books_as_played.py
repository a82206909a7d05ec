"""The auditor's verify holds each coup, bet, posting and shoe card to the events that
recorded it (audit.reports.ledger). An honest session, whatever it went through
(reconstructions pending and final, void cards, a card voided in the sabot, a new shoe, a
chemmy-fi replay with a bet withdrawn and one changed), has nothing to say; a row edited in
SQL is named, with both sides."""

from __future__ import annotations

import pytest
from django.db.models import Max

from audit.models import AuditEvent
from audit.reports.ledger import UNUSED, session_as_played
from floor import services as floor_services
from floor.models import MinimumChange, SessionInterruption, StaffChange, TableSession
from floor.roles import Role
from tables import services
from tables.models import Bank, Bet, Coup, FauxTirageBar, Shoe, ShoeCard

from .test_coups import BANKER_WINS, PUNTA_WINS, TIE

pytestmark = pytest.mark.django_db


def head(stream: str) -> int | None:
    return AuditEvent.objects.filter(stream__name=stream).aggregate(m=Max("seq"))["m"]


def as_played(session) -> list[dict]:
    return session_as_played(session, head(session.audit_stream), head(f"gaming_day:{session.gaming_day_id}"))


@pytest.fixture
def evening(game, make_user):
    """A venezia session through every path that writes coups, bets, shoe cards and the
    session's registers: minimum changes, a relief, interruptions, a bar, an annulled coup, a
    withdrawal, and the close that ends a running interruption."""
    s, by = game.session, game.capo
    floor_services.table_minimum_change(session=s, by=game.commissario, minimum=150_00, maximum=5000_00,
                                        reason="busy evening")  # fmt: skip
    services.regola_mark(session=s, by=by, patron=game.banker, declared=True)
    # Banker alla Regola stood on 3 against a 2: pending, then the shoe's next card (4H).
    pending = services.coup_record(session=s, by=by, cards=["KH", "2S", "3C", "AS", "2D"], punta_draws=True,
                                   banker_draws=False, next_cards=["4H"],
                                   bets=[{"patron": game.seat(2), "amount": 200_00}])  # fmt: skip
    plain = services.coup_record(session=s, by=by, cards=BANKER_WINS, punta_draws=True,
                                 bets=[{"patron": game.seat(2), "amount": 100_00},
                                       {"patron": game.seat(5), "amount": 50_00}])  # fmt: skip
    services.card_void(session=s, by=by, card="QS", reason="seen face up in the sabot")
    # Banker alla Regola drew on 6 although the punta stood: his card is void (RULES example 4).
    void = services.coup_record(session=s, by=by, cards=["4H", "3S", "3C", "3D", "9C"], punta_draws=False,
                                bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    services.bank_open(session=s, by=by, patron=game.seat(3), amount=300_00)
    services.shoe_load(session=s, by=by, number="S-reshuffled")
    tie = services.coup_record(session=s, by=by, cards=TIE, punta_draws=False,
                               bets=[{"patron": game.seat(4), "amount": 100_00}])  # fmt: skip
    # Punta alla Regola stood on 4: the reconstruction asks the banker's decision, then a card.
    services.regola_mark(session=s, by=by, patron=game.seat(2), declared=True)
    decided = services.coup_record(session=s, by=by, cards=["2H", "KS", "2C", "5D", "9D"], punta_draws=False,
                                   bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    services.reconstruction_decide(coup=decided, by=by, side="banker", draws=True)
    services.reconstruction_card(coup=decided, by=by, card="3H")
    annulled = services.coup_open(session=s, by=by)
    services.bet_place(coup=annulled, by=by, patron=game.seat(6), amount=150_00)
    services.coup_annul(coup=annulled, by=by, reason="a card fell from the sabot")
    services.faux_tirage_bar(session=s, by=by, patron=game.seat(7), reason="drew on 7")
    floor_services.table_session_interrupt(session=s, by=game.commissario, reason="dispute")
    floor_services.table_session_resume(session=s, by=game.commissario, reason="settled by the Direzione")
    relief = make_user("capo_relief", Role.CAPO_PARTITA)
    floor_services.table_session_staff_change(session=s, by=game.commissario, capo_partita=relief,
                                              reason="break at 23:00")  # fmt: skip
    services.bank_withdraw(bank=Bank.objects.get(session=s, status="active"), by=relief)
    floor_services.table_session_interrupt(session=s, by=game.commissario, reason="end of the evening")
    floor_services.table_session_close(session=s, by=game.commissario)
    coups = {name: Coup.objects.get(pk=c.pk) for name, c in
             {"pending": pending, "plain": plain, "void": void, "tie": tie, "decided": decided,
              "annulled": annulled}.items()}  # fmt: skip
    assert [c.state for c in coups.values()] == ["settled"] * 5 + ["annulled"]
    game.session.refresh_from_db()
    assert game.session.status == "closed" and game.session.interruptions.count() == 2
    assert coups["pending"].conforming is False and coups["pending"].next_cards == ["4H"]
    assert coups["void"].settled["void_cards"] == ["9C"] and coups["decided"].next_cards == ["3H"]
    return game, coups


def test_an_honest_evening_has_nothing_to_say(evening):
    game, _ = evening
    assert ShoeCard.objects.filter(shoe__session=game.session, voided=True).count() == 2  # QS, 9C
    assert as_played(game.session) == []


def test_an_honest_chemmy_fi_replay_has_nothing_to_say(make_game):
    """A tie replayed: a carried bet withdrawn, another changed by a new bet (RULES.md §3.2)."""
    game = make_game("chemmy-fi")
    s, by = game.session, game.capo
    services.coup_record(session=s, by=by, cards=TIE, punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 300_00},
                               {"patron": game.seat(4), "amount": 200_00}]) # fmt: skip
    replay = services.coup_open(session=s, by=by)
    services.bet_withdraw(coup=replay, by=by, patron=game.seat(4))
    services.bet_place(coup=replay, by=by, patron=game.seat(2), amount=500_00)
    services.rien_ne_va_plus(coup=replay, by=by)
    for card in PUNTA_WINS:
        services.card_deal(coup=replay, by=by, card=card)
    replay.refresh_from_db()
    if replay.state == "dealing":
        services.punta_declare(coup=replay, by=by, draws=False)
        replay.refresh_from_db()
    if replay.state == "dealing":
        services.banker_decide(coup=replay, by=by, draws=False)
        replay.refresh_from_db()
    assert (replay.state, replay.covered) == ("settled", 500_00)
    assert as_played(s) == []


def test_a_bet_edited_in_sql_is_named_with_both_sides(evening):
    """The bet's amount changed, its coup's covered stake and postings left alone: only the
    bets differ from those at rien ne va plus."""
    game, coups = evening
    bet = Bet.objects.get(coup=coups["plain"], patron=game.seat(5))
    Bet.objects.filter(pk=bet.pk).update(amount=80_00)
    [reason] = as_played(game.session)
    assert (reason["code"], reason["coup"]) == ("bets_mismatch", coups["plain"].number)
    p2, p5 = game.seat(2).pk, game.seat(5).pk
    assert reason["in_books"] == [{"patron": p2, "kind": "individual", "amount": 100_00},
                                  {"patron": p5, "kind": "individual", "amount": 80_00}]  # fmt: skip
    assert reason["in_trail"] == [{"patron": p2, "kind": "individual", "amount": 100_00},
                                  {"patron": p5, "kind": "individual", "amount": 50_00}]  # fmt: skip


def test_a_card_edited_in_the_coup_and_the_shoe_is_named(evening):
    game, coups = evening
    coup = coups["plain"]
    card = ShoeCard.objects.get(coup=coup, code="2S")
    ShoeCard.objects.filter(pk=card.pk).update(code="3S")
    Coup.objects.filter(pk=coup.pk).update(cards=[*coup.cards[:4], "3S"])
    reasons = as_played(game.session)
    assert [(r["code"], r.get("coup"), r.get("position")) for r in reasons] == [
        ("coup_mismatch", coup.number, None), ("cards_mismatch", None, card.position)]  # fmt: skip
    assert reasons[0]["fields"] == {"cards": {"in_books": [*coup.cards[:4], "3S"], "in_trail": coup.cards}}
    seen = {"use": "dealt", "coup": coup.number, "side": "punta", "voided": False, "reason": ""}
    assert reasons[1]["in_books"] == {"card": "3S", **seen} and reasons[1]["in_trail"] == {"card": "2S", **seen}
    assert (reasons[1]["shoe"], reasons[1]["shoe_number"]) == (1, "S-1")


def test_a_void_card_unvoided_or_its_reason_changed_is_named(evening):
    game, coups = evening
    unused = ShoeCard.objects.get(coup=coups["void"], code="9C")
    ShoeCard.objects.filter(pk=unused.pk).update(voided=False, void_reason="")
    sabot = ShoeCard.objects.get(shoe__session=game.session, use="void")
    ShoeCard.objects.filter(pk=sabot.pk).update(void_reason="dropped")
    reasons = as_played(game.session)
    assert [(r["code"], r["position"]) for r in reasons] == [
        ("cards_mismatch", sabot.position), ("cards_mismatch", unused.position)]  # fmt: skip
    assert (reasons[0]["in_books"]["reason"], reasons[0]["in_trail"]["reason"]) == (
        "dropped", "seen face up in the sabot")  # fmt: skip
    assert (reasons[1]["in_books"]["voided"], reasons[1]["in_trail"]["voided"]) == (False, True)
    assert reasons[1]["in_trail"]["reason"] == UNUSED


def test_a_card_deleted_or_added_is_named(evening):
    game, _ = evening
    last = ShoeCard.objects.filter(shoe__session=game.session).order_by("-shoe__seq", "-position").first()
    ShoeCard.objects.filter(pk=last.pk).delete()
    extra = ShoeCard.objects.create(shoe=last.shoe, position=last.position + 1, code="AH", use="void",
                                    voided=True, void_reason="dropped", at=last.at, by=last.by)  # fmt: skip
    reasons = as_played(game.session)
    assert [(r["code"], r["shoe"], r["position"]) for r in reasons] == [
        ("cards_mismatch", 2, last.position), ("cards_mismatch", 2, extra.position)]  # fmt: skip
    assert reasons[0]["in_books"] is None and reasons[0]["in_trail"]["card"] == last.code
    assert reasons[1]["in_trail"] is None and reasons[1]["in_books"]["card"] == "AH"


@pytest.mark.parametrize(
    ("coup", "edit", "fields"),
    [
        ("pending", lambda c: {"settled": {**c.settled, "winner": "punta"}}, {"settled"}),
        ("pending", lambda c: {"next_cards": ["5H"]}, {"next_cards"}),
        ("decided", lambda c: {"conforming": True, "violations": []}, {"conforming", "violations"}),
        ("plain", lambda c: {"punta_id": c.bank.banker_id}, {"punta"}),
        ("plain", lambda c: {"regola_banker": False, "banker_draws": True}, {"regola_banker", "banker_draws"}),
        ("void", lambda c: {"as_played": {**c.as_played, "winner": "banker"}}, {"as_played"}),
    ],
)
def test_a_coup_edited_in_sql_names_each_field(evening, coup, edit, fields):
    game, coups = evening
    row = coups[coup]
    Coup.objects.filter(pk=row.pk).update(**edit(row))
    [reason] = as_played(game.session)
    assert (reason["code"], reason["coup"], set(reason["fields"])) == ("coup_mismatch", row.number, fields)
    for field, sides in reason["fields"].items():
        trail = getattr(row, "punta_id" if field == "punta" else field)
        assert sides["in_trail"] == trail and sides["in_books"] != trail


def test_its_queries_do_not_grow_with_the_coups(game):
    """One query per kind of row and one for the events, however many coups the session had
    (memory grows with a session's coups, never the queries)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def coup():
        services.coup_record(session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True,
                             bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip

    def counted() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert as_played(game.session) == []
        return len(queries)

    coup()
    one = counted()
    for _ in range(4):  # (a six-deck shoe holds six KH)
        coup()
    services.card_void(session=game.session, by=game.capo, card="QS", reason="dropped")
    assert counted() == one


@pytest.mark.parametrize(
    ("kind", "rows", "edit", "field", "trail"),
    [
        ("session", lambda g: TableSession.objects.filter(pk=g.session.pk), {"minimum": 100_00}, "minimum", 150_00),
        ("session", lambda g: TableSession.objects.filter(pk=g.session.pk), {"maximum": None}, "maximum", 5000_00),
        ("bank", lambda g: Bank.objects.filter(session=g.session, number=1), {"amount": 1_00}, "amount", None),
        ("bank", lambda g: Bank.objects.filter(session=g.session, number=2), {"end_reason": "lost"}, "end_reason",
         "withdrawn"),
        ("bank", lambda g: Bank.objects.filter(session=g.session, number=1), {"reserve_returned": 7_00},
         "reserve_returned", None),
        ("minimum_change", lambda g: MinimumChange.objects.filter(session=g.session), {"new": 120_00}, "new", 150_00),
        ("staff_change", lambda g: StaffChange.objects.filter(session=g.session), {"reason": "lunch"}, "reason",
         "break at 23:00"),
        ("interruption", lambda g: SessionInterruption.objects.filter(session=g.session, reason="dispute"),
         {"resume_reason": "none"}, "resume_reason", "settled by the Direzione"),
        # A Direzione's suspension passed off as a Commissario's (or the reverse): which one may lift it.
        ("interruption", lambda g: SessionInterruption.objects.filter(session=g.session, reason="dispute"),
         {"interrupted_as": "direzione"}, "interrupted_as", "commissario"),
        ("bar", lambda g: FauxTirageBar.objects.filter(session=g.session), {"reason": "nothing"}, "reason",
         "drew on 7"),
        ("annulled_coup", lambda g: Coup.objects.filter(session=g.session, state="annulled"),
         {"annul_reason": "none"}, "annul_reason", "a card fell from the sabot"),
        ("shoe", lambda g: Shoe.objects.filter(session=g.session, seq=1), {"number": "S-999"}, "number", "S-1"),
        ("shoe", lambda g: Shoe.objects.filter(session=g.session, seq=2), {"finished_at": None},
         {"finished", "finished_at"}, None),
    ],
)
def test_a_register_edited_in_sql_is_named(evening, kind, rows, edit, field, trail):
    """Each register the report prints, edited in SQL: named by its kind, with the field as
    the books hold it and as the trail recorded it."""
    game, _ = evening
    assert rows(game).count() == 1
    rows(game).update(**edit)
    [reason] = as_played(game.session)
    fields = field if isinstance(field, set) else {field}
    assert (reason["code"], reason["record"], set(reason["fields"])) == ("record_mismatch", kind, fields)
    field = min(fields)
    if trail is not None:
        assert reason["fields"][field]["in_trail"] == trail
    assert reason["fields"][field]["in_books"] != reason["fields"][field]["in_trail"]


def test_a_register_row_added_or_deleted_is_named(evening):
    game, _ = evening
    change = MinimumChange.objects.get(session=game.session)
    MinimumChange.objects.filter(pk=change.pk).delete()
    MinimumChange.objects.create(session=game.session, by=game.commissario, at=change.at, old=150_00, new=90_00,
                                 reason="slipped in")  # fmt: skip
    reasons = as_played(game.session)
    assert [(r["record"], r["in_books"], r["in_trail"]) for r in reasons] == [
        ("minimum_change", False, True), ("minimum_change", True, False)]  # fmt: skip
    # The one not in the books said by the time its event was recorded; the other by its row's.
    event = AuditEvent.objects.get(action="minimum.changed", payload_json__contains=f'"change":{change.pk}')
    assert reasons[0]["at"] == event.at.isoformat() and reasons[1]["at"] == change.at.isoformat()


def test_the_verify_names_the_punta_and_says_the_bank_by_its_number(evening):
    """Through the report's naming pass: a coup's punta by his name, its bank by its number."""
    from audit.reports.ledger import _name_patrons
    from audit.views import _explain

    game, coups = evening
    coup = coups["plain"]
    other = Bank.objects.get(session=game.session, number=2)
    Coup.objects.filter(pk=coup.pk).update(punta=game.seat(5), bank=other)
    reasons = as_played(game.session)
    _name_patrons(reasons)
    [line] = _explain({"reasons": reasons})["lines"]
    p2, p5 = game.seat(2), game.seat(5)
    assert line.endswith(
        f"Bank number: 2 in the books, 1 in the audit trail. Punta: {p5.first_name} {p5.last_name} [no registration "
        f"on record] (patron {p5.pk}) in the books, {p2.first_name} {p2.last_name} [no registration on record] "
        f"(patron {p2.pk}) in the audit trail.")  # fmt: skip
    # The fixture's patrons are rows no event registered: named by their rows, and said so.
    assert reasons[0]["fields"]["punta"]["names_of_record"] == {"in_books": False, "in_trail": False}


@pytest.fixture
def asta(make_game):
    """venezia, four seats: the bank lost and passed by all (the asta: two bids, the higher
    wins), then lost again and accepted in turn."""
    from tables.models import Succession

    game = make_game("venezia", seated=4, min_seats_to_start=2)
    s, by = game.session, game.capo
    services.coup_record(session=s, by=by, cards=PUNTA_WINS, punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    first = Succession.objects.get(session=s)
    for patron in (game.seat(2), game.seat(3), game.seat(4)):
        services.offer_pass(succession=first, by=by, patron=patron)
    auction = services.auction_open(session=s, by=game.commissario)
    services.auction_bid(auction=auction, by=by, patron=game.seat(3), amount=300_00)
    services.auction_bid(auction=auction, by=by, patron=game.seat(4), amount=400_00)
    services.auction_close(auction=auction, by=by)
    services.coup_record(session=s, by=by, cards=PUNTA_WINS, punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    second = Succession.objects.get(session=s, number=2)
    offer = second.offers.filter(status="pending").order_by("order").first()
    services.offer_accept(succession=second, by=by, patron=offer.patron, amount=200_00)
    assert list(Succession.objects.filter(session=s).order_by("number").values_list("status", flat=True)) == [
        "taken", "taken"]  # fmt: skip
    return game


def test_an_honest_asta_has_nothing_to_say(asta):
    assert as_played(asta.session) == []


@pytest.mark.parametrize(
    ("kind", "model", "filters", "edit", "field"),
    [
        ("succession", "Succession", {"number": 1}, {"lapse_reason": "no_bids"}, "lapse_reason"),
        ("succession", "Succession", {"number": 2}, {"amount": 1_00}, "amount"),
        ("auction", "Auction", {}, {"winning_bid": None}, "winning_bid"),
        ("bid", "Bid", {"seq": 2}, {"amount": 500_00}, "amount"),
        ("offer", "SuccessionOffer", {"succession__number": 2, "status": "accepted"}, {"amount_min": 1_00},
         "amount_min"),
    ],
)
def test_a_succession_an_asta_or_a_bid_edited_is_named(asta, kind, model, filters, edit, field):
    from django.apps import apps

    rows = apps.get_model("tables", model).objects.filter(**filters)
    session = {"Bid": "auction__session", "SuccessionOffer": "succession__session"}.get(model, "session")
    rows = rows.filter(**{session: asta.session})
    assert rows.count() == 1
    rows.update(**edit)
    [reason] = as_played(asta.session)
    assert (reason["code"], reason["record"], set(reason["fields"])) == ("record_mismatch", kind, {field})


def _lost_passed_then_limits(make_game, *, minimum: int):
    """venezia, four seats, a table maximum of 5000.00: the bank lost, seat 2 passes, then the
    Commissario sets the minimum to `minimum` and the maximum to 4000.00. (game, succession)"""
    from tables.models import Succession

    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2, maximum=5000_00)
    s, by = game.session, game.capo
    services.coup_record(session=s, by=by, cards=PUNTA_WINS, punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    succ = Succession.objects.get(session=s)
    services.offer_pass(succession=succ, by=by, patron=game.seat(2))
    floor_services.table_minimum_change(session=s, by=game.commissario, minimum=minimum, maximum=4000_00,
                                        reason="the house")  # fmt: skip
    return game, succ


@pytest.fixture
def bounded(make_game):
    """venezia, four seats, a table maximum of 5000.00 lowered to 4000.00 while the bank
    waits for a successor: seat 2 passes under the first, seat 3 takes it under the second."""
    game, succ = _lost_passed_then_limits(make_game, minimum=100_00)
    services.offer_accept(succession=succ, by=game.capo, patron=game.seat(3), amount=300_00)
    return game


def test_the_report_shows_the_maximum_an_offer_was_answered_under(bounded):
    from tables import report_selectors

    rows = report_selectors.succession_offer_rows(gaming_day_id=bounded.session.gaming_day_id)
    assert [(r[3], r[9], r[7], r[8]) for r in rows] == [
        (1, "passed", 100_00, 5000_00), (2, "accepted", 100_00, 4000_00), (3, "skipped", 100_00, 4000_00)]  # fmt: skip
    assert as_played(bounded.session) == []


def test_an_offers_maximum_edited_is_named_and_older_events_still_verify(bounded):
    """The maximum an answered offer keeps is held to its event. Events written before
    offers kept it do not say it: the row's NULL (as then written) is held to the offer's
    laid-out NULL, and verifies."""
    import json

    from tables.models import SuccessionOffer
    from tests.audit.conftest import trigger_disabled

    offers = SuccessionOffer.objects.filter(succession__session=bounded.session)
    offers.filter(status="accepted").update(amount_max=None)
    [reason] = as_played(bounded.session)
    assert (reason["code"], reason["record"], reason["fields"]) == (
        "record_mismatch", "offer", {"amount_max": {"in_books": None, "in_trail": 4000_00}})  # fmt: skip
    # As written before: the answers' events without amount_max, the rows with NULL.
    events = AuditEvent.objects.filter(stream__name=bounded.session.audit_stream,
                                       action__in=["succession.offer_passed", "succession.offer_accepted"])  # fmt: skip
    assert events.count() == 2
    with trigger_disabled():
        for event in events:
            older = {**event.payload, "changes": [{k: v for k, v in c.items() if k != "amount_max"}
                                                  for c in event.payload["changes"]]}  # fmt: skip
            AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(older))
    offers.update(amount_max=None)
    assert as_played(bounded.session) == []
    offers.filter(order=1).update(amount_max=5000_00)
    [reason] = as_played(bounded.session)
    assert (reason["record"], reason["number"], set(reason["fields"])) == ("offer", 1, {"amount_max"})


def _built_verified_then_maximum_taken_off(game, order, tmp_path, settings, auditor, capture) -> dict:
    """The day closed and its report built, verified ok through the API; then offer `order`'s
    kept maximum taken off in SQL: the verification's answer."""
    from rest_framework.test import APIClient

    from audit.models import DayReport
    from tables.models import SuccessionOffer

    settings.MEDIA_ROOT = tmp_path / "media"
    with capture(execute=True):
        floor_services.gaming_day_close(gaming_day=game.session.gaming_day, by=game.commissario,
                                        open_sessions="close")  # fmt: skip
    report = DayReport.objects.get(gaming_day=game.session.gaming_day)
    client = APIClient()
    client.force_authenticate(auditor)
    body = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body
    SuccessionOffer.objects.filter(succession__session=game.session, order=order).update(amount_max=None)
    return client.post(f"/api/reports/{report.pk}/verify/").json()


def test_a_built_report_with_offers_answered_under_a_maximum_verifies(bounded, tmp_path, settings, auditor,
                                                                       django_capture_on_commit_callbacks):
    # the maximum it was answered under taken off (as the rows read before they kept it)
    body = _built_verified_then_maximum_taken_off(bounded, 3, tmp_path, settings, auditor,
                                                  django_capture_on_commit_callbacks)  # fmt: skip
    assert body["ok"] is False
    assert [(r["code"], r["record"], r["number"], set(r["fields"])) for r in body["reasons"]] == [
        ("record_mismatch", "offer", 3, {"amount_max"})]  # fmt: skip


@pytest.fixture
def lapsed(make_game):
    """venezia, four seats, a table maximum of 5000.00: the bank lost, seat 2 passes, the
    minimum raised to 200.00 and the maximum lowered to 4000.00, then a bank entered directly
    (seat 3): the succession lapses, seats 3 and 4's offers skipped on today's terms."""
    game, succ = _lost_passed_then_limits(make_game, minimum=200_00)
    s, by = game.session, game.capo
    services.bank_open(session=s, by=by, patron=game.seat(3), amount=300_00)
    succ.refresh_from_db()
    assert succ.status == "lapsed"
    return game


def test_a_lapsed_offers_maximum_edited_is_named_and_older_lapses_still_verify(lapsed):
    """The terms a lapsed offer keeps (those in force at the lapse) are held to the lapse's
    event. A lapse written before it said the maximum: the row's NULL (as then written) is
    held to the offer's laid-out NULL, and verifies."""
    import json

    from tables.models import SuccessionOffer
    from tests.audit.conftest import trigger_disabled

    offers = SuccessionOffer.objects.filter(succession__session=lapsed.session, reason="lapsed")
    assert sorted(offers.values_list("order", "amount_min", "amount_max")) == [(2, 200_00, 4000_00),
                                                                               (3, 200_00, 4000_00)]  # fmt: skip
    assert as_played(lapsed.session) == []
    offers.filter(order=3).update(amount_max=None)
    [reason] = as_played(lapsed.session)
    assert (reason["code"], reason["record"], reason["number"], reason["fields"]) == (
        "record_mismatch", "offer", 3, {"amount_max": {"in_books": None, "in_trail": 4000_00}})  # fmt: skip
    # As written before: the lapse's event without amount_max, the rows with NULL.
    event = AuditEvent.objects.get(stream__name=lapsed.session.audit_stream, action="succession.lapsed")
    older = {**event.payload, "changes": [{k: v for k, v in c.items() if k != "amount_max"}
                                          for c in event.payload["changes"]]}  # fmt: skip
    with trigger_disabled():
        AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(older))
    offers.update(amount_max=None)
    assert as_played(lapsed.session) == []
    offers.filter(order=2).update(amount_max=4000_00)
    [reason] = as_played(lapsed.session)
    assert (reason["record"], reason["number"], set(reason["fields"])) == ("offer", 2, {"amount_max"})


def test_a_built_report_with_a_lapse_under_a_maximum_verifies(lapsed, tmp_path, settings, auditor,
                                                              django_capture_on_commit_callbacks):
    from tables import report_selectors

    rows = report_selectors.succession_offer_rows(gaming_day_id=lapsed.session.gaming_day_id)
    assert [(r[3], r[9], r[10], r[7], r[8]) for r in rows] == [
        (1, "passed", "", 100_00, 5000_00), (2, "skipped", "lapsed", 200_00, 4000_00),
        (3, "skipped", "lapsed", 200_00, 4000_00)]  # fmt: skip
    # a lapsed offer's maximum taken off (as the rows read before a lapse kept it)
    body = _built_verified_then_maximum_taken_off(lapsed, 2, tmp_path, settings, auditor,
                                                  django_capture_on_commit_callbacks)  # fmt: skip
    assert body["ok"] is False
    assert [(r["code"], r["record"], r["number"], r["fields"]) for r in body["reasons"]] == [
        ("record_mismatch", "offer", 2, {"amount_max": {"in_books": None, "in_trail": 4000_00}})]  # fmt: skip


def test_an_offer_edited_is_named_within_its_succession(asta):
    """The first succession's first offer said passed when it was: accepted in SQL."""
    from audit.views import _explain
    from tables.models import SuccessionOffer

    offer = SuccessionOffer.objects.filter(succession__session=asta.session, succession__number=1).order_by("order")[0]
    assert offer.status == "passed"
    SuccessionOffer.objects.filter(pk=offer.pk).update(status="accepted", amount=500_00)
    [reason] = as_played(asta.session)
    assert (reason["record"], reason["succession"], reason["number"], set(reason["fields"])) == (
        "offer", 1, offer.order, {"status", "amount"})  # fmt: skip
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.startswith(f"Table {asta.session.table.number}, session 1, succession 1, offer {offer.order}: "
                           "Answer: accepted in the books, passed in the audit trail.")  # fmt: skip


def test_an_annulled_coups_bets_are_held_to_what_it_gave_back(evening):
    """The report's annulled section counts the bets each annulled coup gave back: a bet
    added to it in SQL is named against the coup.annulled event's list."""
    game, coups = evening
    annulled = coups["annulled"]
    bet = Bet.objects.get(coup=annulled)
    Bet.objects.create(coup=annulled, patron=game.seat(8), seat=bet.seat, kind="individual", amount=5_00,
                       order=2, at=bet.at, by=bet.by)  # fmt: skip
    [reason] = as_played(game.session)
    assert (reason["code"], reason["coup"]) == ("bets_mismatch", annulled.number)
    assert sorted(b["amount"] for b in reason["in_books"]) == [5_00, 150_00]
    assert [b["amount"] for b in reason["in_trail"]] == [150_00]


def test_an_unreadable_event_is_named_not_a_crash(evening):
    """An event whose payload was rewritten into something its action never writes (its
    chain rebuilt, say): verify names it and goes on, it does not fail with an error."""
    from tests.audit.conftest import trigger_disabled

    game, coups = evening
    events = AuditEvent.objects.filter(stream__name=game.session.audit_stream)
    rnvp = events.get(action="coup.rien_ne_va_plus", subject_id=str(coups["plain"].pk))
    settled = events.get(action="coup.settled", subject_id=str(coups["tie"].pk))
    with trigger_disabled():
        AuditEvent.objects.filter(pk=rnvp.pk).update(payload_json="not json")
        AuditEvent.objects.filter(pk=settled.pk).update(payload_json='{"coup": "x", "postings": 7}')
    reasons = as_played(game.session)
    assert [(r["code"], r.get("seq")) for r in reasons[:2]] == [
        ("event_unreadable", rnvp.seq), ("event_unreadable", settled.seq)]  # fmt: skip
    assert reasons[0]["action"] == "coup.rien_ne_va_plus" and reasons[0]["stream"] == game.session.audit_stream
    # The rows those events recorded are now held to nothing: said, not crashed on.
    assert {(r["code"], r.get("coup")) for r in reasons[2:]} >= {
        ("bets_mismatch", coups["plain"].number), ("coup_mismatch", coups["tie"].number)}  # fmt: skip
    from audit.views import _explain

    assert _explain({"reasons": reasons})["lines"][0] == (
        f"Table {game.session.table.number}, session 1: the audit event {rnvp.seq} of stream "
        f"{game.session.audit_stream} (coup.rien_ne_va_plus) does not hold what its action records; the rows it "
        "recorded are not checked against it.")  # fmt: skip


def test_without_the_days_stream_an_interruption_ended_by_the_close_is_not_held(game):
    """The close that ends a running interruption is in the day's stream: read without it,
    the interruption's end is unknown, not said to differ."""
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="dispute")
    floor_services.table_session_close(session=game.session, by=game.commissario)
    assert session_as_played(game.session, head(game.session.audit_stream), None) == []
    assert as_played(game.session) == []


# --------------------------------------------------------------------------- times

SECOND = __import__("datetime").timedelta(seconds=1)


@pytest.mark.parametrize(
    ("kind", "model", "filters", "column", "field"),
    [
        ("session", "floor.TableSession", {}, "opened_at", "opened_at"),
        ("bank", "tables.Bank", {"number": 1}, "opened_at", "opened_at"),
        ("bank", "tables.Bank", {"number": 1}, "ended_at", "ended_at"),  # lost in a settlement
        ("bank", "tables.Bank", {"number": 2}, "ended_at", "ended_at"),  # withdrawn
        ("minimum_change", "floor.MinimumChange", {}, "at", "at"),
        ("staff_change", "floor.StaffChange", {}, "at", "at"),
        ("bar", "tables.FauxTirageBar", {}, "at", "at"),
        ("annulled_coup", "tables.Coup", {"state": "annulled"}, "annulled_at", "annulled_at"),
        ("shoe", "tables.Shoe", {"seq": 1}, "loaded_at", "loaded_at"),
        ("shoe", "tables.Shoe", {"seq": 1}, "finished_at", "finished_at"),  # ended by the next load
        ("shoe", "tables.Shoe", {"seq": 2}, "finished_at", "finished_at"),  # ended by the close
    ],
)
def test_a_time_the_report_prints_edited_in_sql_is_named(evening, kind, model, filters, column, field):
    """Every time the report prints is the row's own, recorded in its event beside the
    event's: moved by a second in SQL, it is named with both times."""
    from django.apps import apps

    game, _ = evening
    rows = apps.get_model(model).objects.filter(
        **filters, **({"pk": game.session.pk} if kind == "session" else {"session": game.session}))
    [was] = rows.values_list(column, flat=True)
    rows.update(**{column: was + SECOND})
    [reason] = as_played(game.session)
    assert (reason["code"], reason["record"], set(reason["fields"])) == ("record_mismatch", kind, {field})
    assert reason["fields"][field] == {"in_books": (was + SECOND).isoformat(), "in_trail": was.isoformat()}


def test_a_settled_coups_time_edited_is_named(evening):
    from audit.views import _explain

    game, coups = evening
    coup = coups["tie"]
    Coup.objects.filter(pk=coup.pk).update(settled_at=coup.settled_at + 86400 * SECOND)
    [reason] = as_played(game.session)
    assert (reason["code"], reason["coup"], reason["fields"]) == ("coup_mismatch", coup.number, {"settled_at": {
        "in_books": (coup.settled_at + 86400 * SECOND).isoformat(), "in_trail": coup.settled_at.isoformat()}})
    # In words: the date and time of each side, in the casino's zone (a day apart, same clock).
    from django.utils import timezone

    [line] = _explain({"reasons": [reason]})["lines"]
    local = timezone.localtime(coup.settled_at)
    assert line.endswith(f"Settled at: {(local + 86400 * SECOND):%Y-%m-%d %H:%M:%S} in the books, "
                         f"{local:%Y-%m-%d %H:%M:%S} in the audit trail.")  # fmt: skip


def test_a_time_moved_within_its_second_is_said_to_the_microsecond(evening):
    from django.utils import timezone

    from audit.views import _explain

    game, _ = evening
    change = MinimumChange.objects.get(session=game.session)
    moved = change.at.replace(microsecond=(change.at.microsecond + 1) % 1_000_000)
    MinimumChange.objects.filter(pk=change.pk).update(at=moved)
    [reason] = as_played(game.session)
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.endswith(f"Time: {timezone.localtime(moved):%Y-%m-%d %H:%M:%S.%f} in the books, "
                         f"{timezone.localtime(change.at):%Y-%m-%d %H:%M:%S.%f} in the audit trail.")  # fmt: skip


@pytest.mark.parametrize(
    ("model", "filters", "column", "field"),
    [
        ("Succession", {"number": 1}, "started_at", "started_at"),
        ("Succession", {"number": 1}, "ended_at", "ended_at"),  # taken at the asta's close
        ("Succession", {"number": 2}, "ended_at", "ended_at"),  # taken on an answer
        ("Auction", {}, "opened_at", "opened_at"),
        ("Auction", {}, "closed_at", "closed_at"),
        ("Bid", {"seq": 1}, "at", "at"),
        ("SuccessionOffer", {"succession__number": 2, "status": "accepted"}, "answered_at", "answered_at"),
        ("SuccessionOffer", {"succession__number": 1, "status": "passed", "order": 1}, "answered_at", "answered_at"),
    ],
)
def test_a_succession_time_edited_in_sql_is_named(asta, model, filters, column, field):
    from django.apps import apps

    rows = apps.get_model("tables", model).objects.filter(**filters)
    session = {"Bid": "auction__session", "SuccessionOffer": "succession__session"}.get(model, "session")
    rows = rows.filter(**{session: asta.session})
    [was] = rows.values_list(column, flat=True)
    rows.update(**{column: was - SECOND})
    [reason] = as_played(asta.session)
    assert reason["code"] == "record_mismatch" and set(reason["fields"]) == {field}
    assert reason["fields"][field] == {"in_books": (was - SECOND).isoformat(), "in_trail": was.isoformat()}


def test_a_lapsed_succession_and_its_skipped_offers_keep_one_time(make_game):
    """A bank entered directly over a live succession lapses it: its end and every offer it
    skipped share one time, and each is held to it."""
    from tables.models import Succession, SuccessionOffer

    game = make_game("venezia", seated=4, min_seats_to_start=2)
    services.coup_record(session=game.session, by=game.capo, cards=PUNTA_WINS, punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    services.bank_open(session=game.session, by=game.capo, patron=game.seat(3), amount=300_00)
    succ = Succession.objects.get(session=game.session)
    skipped = SuccessionOffer.objects.filter(succession=succ, reason="lapsed")
    assert succ.status == "lapsed" and skipped.exists()
    assert set(skipped.values_list("answered_at", flat=True)) == {succ.ended_at}
    assert as_played(game.session) == []
    skipped.filter(pk=skipped.first().pk).update(answered_at=succ.ended_at + SECOND)
    [reason] = as_played(game.session)
    assert (reason["record"], set(reason["fields"])) == ("offer", {"answered_at"})


def test_an_event_written_before_it_said_the_rows_time_leaves_it_unheld(evening):
    """Events from before the rows' times were recorded in them: the time is not held (it is
    not said to differ), the rest of the row still is."""
    import json

    from tests.audit.conftest import trigger_disabled

    game, _ = evening
    event = AuditEvent.objects.get(stream__name=game.session.audit_stream, action="minimum.changed")
    older = {k: v for k, v in event.payload.items() if k != "at"}
    with trigger_disabled():
        AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(older))
    change = MinimumChange.objects.get(session=game.session)
    MinimumChange.objects.filter(pk=change.pk).update(at=change.at + SECOND)
    assert as_played(game.session) == []
    MinimumChange.objects.filter(pk=change.pk).update(reason="moved")
    [reason] = as_played(game.session)
    assert set(reason["fields"]) == {"reason"}


@pytest.mark.parametrize("written", ["2026-13-45T00:00:00+00:00",  # no such date
                                     "9999-12-31T23:59:59+00:00",  # past year 9999 in the casino's zone
                                     "0001-01-01T00:30:00+01:00"])  # before year 1 in UTC
def test_a_rewritten_time_that_is_no_date_is_said_as_written(evening, written):
    """An event's time rewritten into a well-formed string that is no date, or no date the
    casino's zone can show: the desk says it as written, it does not fail on it."""
    import json

    from audit.views import _explain
    from tests.audit.conftest import trigger_disabled

    game, _ = evening
    event = AuditEvent.objects.filter(stream__name=game.session.audit_stream,
                                      action="table_session.interrupted").order_by("seq").first()  # fmt: skip
    with trigger_disabled():
        AuditEvent.objects.filter(pk=event.pk).update(
            payload_json=json.dumps({**event.payload, "at": written}))
    [reason] = as_played(game.session)
    assert (reason["record"], set(reason["fields"])) == ("interruption", {"interrupted_at"})
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.endswith(f"in the books, {written} in the audit trail.")


def test_a_bets_seat_order_standing_recorder_or_time_edited_in_sql_is_named(evening, make_user):
    """QA: the report prints each bet's seat, order, standing, time and who recorded it; the
    check compared only the stakes, so those could be edited unseen. Its `bet.placed`
    records them (the time since it records it)."""
    from datetime import timedelta

    from audit.views import _explain
    from floor.models import Seat

    game, coups = evening
    p2, p5 = game.seat(2).pk, game.seat(5).pk
    bet = Bet.objects.get(coup=coups["plain"], patron_id=p5)
    other = Seat.objects.filter(session=game.session).exclude(pk=bet.seat_id).first()
    intruder = make_user("intruder", Role.CAPO_PARTITA)
    edits = [
        ("seat", {"seat": other}, bet.seat.seat_number, other.seat_number),
        ("standing", {"standing": not bet.standing}, bet.standing, not bet.standing),
        ("by", {"by": intruder}, bet.by_id, intruder.pk),
        ("at", {"at": bet.at - timedelta(minutes=3)}, bet.at.isoformat(), (bet.at - timedelta(minutes=3)).isoformat()),
    ]
    for field, change, was, now in edits:
        Bet.objects.filter(pk=bet.pk).update(**change)
        [reason] = as_played(game.session)
        assert (reason["code"], reason["coup"]) == ("bets_mismatch", coups["plain"].number)
        assert reason["in_books"] == reason["in_trail"]  # the stakes are as they were
        assert reason["fields"] == [{"patron": p5, "field": field, "in_books": now, "in_trail": was}], field
        Bet.objects.filter(pk=bet.pk).update(seat=bet.seat, standing=bet.standing, by=bet.by, at=bet.at)
        assert as_played(game.session) == []
    # Two bets' places in the betting order swapped.
    first = Bet.objects.get(coup=coups["plain"], patron_id=p2)
    Bet.objects.filter(pk=first.pk).update(order=99)
    Bet.objects.filter(pk=bet.pk).update(order=first.order)
    Bet.objects.filter(pk=first.pk).update(order=bet.order)
    [reason] = as_played(game.session)
    assert reason["fields"] == [
        {"patron": p2, "field": "order", "in_books": bet.order, "in_trail": first.order},
        {"patron": p5, "field": "order", "in_books": first.order, "in_trail": bet.order},
    ]
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.endswith(f"patron {p2}, place in the betting order: {bet.order} in the books, {first.order} in "
                         f"the audit trail. patron {p5}, place in the betting order: {first.order} in the books, "
                         f"{bet.order} in the audit trail.")  # fmt: skip


def test_a_banco_solos_bet_is_held_to_its_call_and_rien_ne_va_plus(game):
    from floor.models import Seat

    s, by = game.session, game.capo
    coup = services.coup_record(session=s, by=by, cards=BANKER_WINS, punta_draws=True, banco=game.seat(3))
    bet = Bet.objects.get(coup=coup)
    assert bet.kind == "banco" and as_played(s) == []
    other = Seat.objects.filter(session=s).exclude(pk=bet.seat_id).first()
    Bet.objects.filter(pk=bet.pk).update(seat=other, order=2)
    [reason] = as_played(s)
    assert [(f["field"], f["in_books"], f["in_trail"]) for f in reason["fields"]] == [
        ("seat", other.seat_number, bet.seat.seat_number), ("order", 2, 1)]  # fmt: skip


def test_a_bet_placed_before_its_event_said_its_time_leaves_the_time_unheld(evening):
    import json

    from tests.audit.conftest import trigger_disabled

    game, coups = evening
    with trigger_disabled():
        for event in AuditEvent.objects.filter(action="bet.placed", stream__name=game.session.audit_stream):
            payload = {k: v for k, v in event.payload.items() if k != "at"}
            AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(payload))
    bet = Bet.objects.get(coup=coups["plain"], patron=game.seat(5))
    Bet.objects.filter(pk=bet.pk).update(at=bet.at.replace(year=2001))
    assert as_played(game.session) == []
    Bet.objects.filter(pk=bet.pk).update(order=7)
    assert [f["field"] for f in as_played(game.session)[0]["fields"]] == ["order"]


# --------------------------------------------------------------------------- rows no check compared


@pytest.fixture
def declined(make_game):
    """The first bank declined by seats 1 and 2 (RULES.md §5), opened by seat 3."""
    game = make_game("venezia", bank=None)
    s, by = game.session, game.capo
    services.first_bank_pass(session=s, by=by, patron=game.seat(1))
    services.first_bank_pass(session=s, by=by, patron=game.seat(2))
    services.bank_open(session=s, by=by, patron=game.seat(3), amount=1000_00)
    return game


def test_a_first_bank_decline_edited_deleted_or_added_in_sql_is_named(declined, make_user):
    """QA: the first bank's declines (`bank.first_declined`) were held to nothing: a decline
    moved to another patron or seat, its time or recorder changed, deleted or slipped in
    went unseen. Each is named now, with both sides."""
    from datetime import timedelta

    from audit.views import _explain
    from floor.models import Seat
    from tables.models import FirstBankPass

    game = declined
    assert as_played(game.session) == []
    first = FirstBankPass.objects.get(session=game.session, seat_number=1)
    other = Seat.objects.get(session=game.session, seat_number=5)
    intruder = make_user("intruder", Role.CAPO_PARTITA)
    later = first.at + timedelta(minutes=2)
    edits = [
        ("patron", {"patron": other.patron}, first.patron_id, other.patron_id),
        ("seat", {"seat": other}, first.seat_id, other.pk),
        ("seat_number", {"seat_number": 5}, 1, 5),
        ("at", {"at": later}, first.at.isoformat(), later.isoformat()),
        ("by", {"by": intruder}, first.by_id, intruder.pk),
    ]
    for field, change, was, now in edits:
        FirstBankPass.objects.filter(pk=first.pk).update(**change)
        [reason] = as_played(game.session)
        assert (reason["code"], reason["record"], reason["in_books"], reason["in_trail"]) == (
            "record_mismatch", "first_bank_pass", True, True), field  # fmt: skip
        assert reason["fields"] == {field: {"in_books": now, "in_trail": was}}, field
        FirstBankPass.objects.filter(pk=first.pk).update(patron=first.patron, seat=first.seat_id,
                                                         seat_number=1, at=first.at, by=first.by)  # fmt: skip
        assert as_played(game.session) == []
    # Deleted, and another slipped in with no event.
    FirstBankPass.objects.filter(pk=first.pk).delete()
    FirstBankPass.objects.create(session=game.session, patron=other.patron, seat=other, seat_number=5,
                                 at=first.at, by=game.capo)  # fmt: skip
    reasons = as_played(game.session)
    assert [(r["record"], r["in_books"], r["in_trail"]) for r in reasons] == [
        ("first_bank_pass", False, True), ("first_bank_pass", True, False)]  # fmt: skip
    lines = _explain({"reasons": reasons})["lines"]
    t = game.session.table.number
    assert lines[0].startswith(f"Table {t}, session {game.session.number}, the first bank declined at ")
    assert lines[0].endswith("the books have no such row; the audit trail recorded it.")
    from django.utils import translation

    with translation.override("it"):
        line = _explain({"reasons": reasons})["lines"][1]
    assert line.startswith(f"Tavolo {t}, sessione {game.session.number}, la passe del primo banco delle ")


def test_a_first_bank_decline_recorded_before_its_event_said_its_seat_leaves_the_seat_unheld(declined):
    import json

    from floor.models import Seat
    from tables.models import FirstBankPass
    from tests.audit.conftest import trigger_disabled

    game = declined
    with trigger_disabled():
        for event in AuditEvent.objects.filter(action="bank.first_declined"):
            payload = {k: v for k, v in event.payload.items() if k != "seat"}
            AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(payload))
    first = FirstBankPass.objects.get(session=game.session, seat_number=1)
    FirstBankPass.objects.filter(pk=first.pk).update(seat=Seat.objects.get(session=game.session, seat_number=5))
    assert as_played(game.session) == []
    FirstBankPass.objects.filter(pk=first.pk).update(seat_number=4)
    assert set(as_played(game.session)[0]["fields"]) == {"seat_number"}


def test_a_coups_settler_edited_in_sql_is_named(evening, make_user):
    """QA: a settled coup's `settled_by` was compared with nothing; its `coup.settled`'s actor
    says who settled it."""
    from audit.reports.ledger import _name_patrons
    from audit.views import _explain

    game, coups = evening
    coup = coups["plain"]
    intruder = make_user("intruder", Role.CAPO_PARTITA)
    Coup.objects.filter(pk=coup.pk).update(settled_by=intruder)
    reasons = as_played(game.session)
    [reason] = reasons
    assert (reason["code"], reason["coup"]) == ("coup_mismatch", coup.number)
    assert reason["fields"] == {"settled_by": {"in_books": intruder.pk, "in_trail": coup.settled_by_id}}
    _name_patrons(reasons)
    [line] = _explain({"reasons": reasons})["lines"]
    assert line.endswith(f"Settled by: intruder in the books, {game.capo.username} in the audit trail.")


def test_a_postings_bet_or_time_edited_in_sql_is_named(evening):
    """QA: a posting's bet (the report sums each bet's result from it) and its time were
    compared with nothing: two bettors' postings swapped their bets, or one moved in time,
    every entry the same. Its `coup.settled` records both (the bet since it says it)."""
    from datetime import timedelta

    from audit.views import _explain
    from tables.models import Posting

    game, coups = evening
    coup = coups["plain"]
    p2, p5 = game.seat(2).pk, game.seat(5).pk
    two, five = (Posting.objects.get(coup=coup, patron_id=p, role="bettor") for p in (p2, p5))
    b2, b5 = (Bet.objects.get(pk=p.bet_id).order for p in (two, five))
    Posting.objects.filter(pk=two.pk).update(bet=five.bet_id)
    Posting.objects.filter(pk=five.pk).update(bet=two.bet_id)
    [reason] = as_played(game.session)
    assert (reason["code"], reason["coup"]) == ("postings_mismatch", coup.number)
    assert reason["in_books"] == reason["in_trail"]  # the entries are as they were
    assert reason["fields"] == [
        {"patron": p2, "role": "bettor", "field": "bet", "in_books": b5, "in_trail": b2},
        {"patron": p5, "role": "bettor", "field": "bet", "in_books": b2, "in_trail": b5},
    ]
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.endswith(f"patron {p5} (bettor), bet (its place in the betting order): {b2} in the books, "
                         f"{b5} in the audit trail.")  # fmt: skip
    Posting.objects.filter(pk=two.pk).update(bet=two.bet_id)
    Posting.objects.filter(pk=five.pk).update(bet=five.bet_id)
    assert as_played(game.session) == []
    house = Posting.objects.get(coup=coup, role="house")
    Posting.objects.filter(pk=house.pk).update(at=house.at - timedelta(hours=1))
    [reason] = as_played(game.session)
    assert reason["fields"] == [{"patron": None, "role": "house", "field": "at",
                                 "in_books": (house.at - timedelta(hours=1)).isoformat(),
                                 "in_trail": house.at.isoformat()}]  # fmt: skip


def test_a_posting_settled_before_its_event_said_its_bet_leaves_the_bet_unheld(evening):
    import json

    from tables.models import Posting
    from tests.audit.conftest import trigger_disabled

    game, coups = evening
    with trigger_disabled():
        for event in AuditEvent.objects.filter(action="coup.settled", stream__name=game.session.audit_stream):
            payload = {**event.payload, "postings": [{k: v for k, v in p.items() if k != "bet"}
                                                      for p in event.payload["postings"]]}  # fmt: skip
            AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(payload))
    assert as_played(game.session) == []
    two = Posting.objects.get(coup=coups["plain"], patron=game.seat(2), role="bettor")
    other = Bet.objects.get(coup=coups["plain"], patron=game.seat(5))
    Posting.objects.filter(pk=two.pk).update(bet=other)
    assert as_played(game.session) == []


def test_a_regola_mark_deleted_or_edited_in_sql_is_named(evening, make_user):
    """QA: the Regola marks (`regola.marked`) were held to nothing: a mark deleted, or its
    declaration, recorder or time changed, went unseen."""
    from datetime import timedelta

    from audit.views import _explain
    from tables.models import RegolaMark

    game, _ = evening
    mark = RegolaMark.objects.get(session=game.session, patron=game.seat(2))
    intruder = make_user("intruder", Role.CAPO_PARTITA)
    later = mark.set_at + timedelta(minutes=1)
    for field, change, was, now in [("declared", {"declared": False}, True, False),
                                    ("set_by", {"set_by": intruder}, mark.set_by_id, intruder.pk),
                                    ("set_at", {"set_at": later}, mark.set_at.isoformat(), later.isoformat())]:  # fmt: skip
        RegolaMark.objects.filter(pk=mark.pk).update(**change)
        [reason] = as_played(game.session)
        assert (reason["record"], reason["fields"]) == ("regola", {field: {"in_books": now, "in_trail": was}})
        RegolaMark.objects.filter(pk=mark.pk).update(declared=True, set_by=mark.set_by, set_at=mark.set_at)
    assert as_played(game.session) == []
    RegolaMark.objects.filter(pk=mark.pk).delete()
    [reason] = as_played(game.session)
    assert (reason["code"], reason["record"], reason["in_books"], reason["in_trail"]) == (
        "record_mismatch", "regola", False, True)  # fmt: skip
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.startswith(f"Table {game.session.table.number}, session {game.session.number}, the Regola mark of ")
    assert line.endswith("the books have no such row; the audit trail recorded it.")


def test_a_seats_patron_edited_in_sql_is_named(evening):
    """QA: a place's patron (or its number, or its times) edited in SQL was compared with
    nothing; its `seat.taken`, `seat.released` and the session's close record them."""
    from datetime import timedelta

    from floor.models import Seat

    game, _ = evening
    seat = Seat.objects.get(session=game.session, seat_number=8)  # no bet says its number
    Seat.objects.filter(pk=seat.pk).update(seat_number=9)  # the close released it: no longer unique
    [reason] = as_played(game.session)
    assert (reason["record"], reason["fields"]) == ("seat", {"seat_number": {"in_books": 9, "in_trail": 8}})
    Seat.objects.filter(pk=seat.pk).update(seat_number=8, left_at=seat.left_at + timedelta(seconds=1))
    [reason] = as_played(game.session)
    assert (reason["record"], set(reason["fields"])) == ("seat", {"left_at"})
    Seat.objects.filter(pk=seat.pk).update(left_at=seat.left_at)
    assert as_played(game.session) == []


def test_a_seats_patron_swapped_in_sql_is_named(game):
    from audit.reports.records import name_records
    from floor.models import Seat

    four, five = (Seat.objects.get(session=game.session, seat_number=n) for n in (4, 5))
    # One patron holds one place: five's is released first, then the patrons swapped.
    Seat.objects.filter(pk=five.pk).update(patron=four.patron, left_at=five.taken_at, left_by=game.capo)
    Seat.objects.filter(pk=four.pk).update(patron=five.patron)
    reasons = as_played(game.session)
    assert [(r["record"], sorted(r["fields"])) for r in reasons] == [
        ("seat", ["patron"]), ("seat", ["left_at", "left_by", "patron"])]  # fmt: skip
    assert reasons[0]["fields"]["patron"] == {"in_books": five.patron_id, "in_trail": four.patron_id}
    name_records(reasons)
    p = five.patron
    assert reasons[0]["fields"]["patron"]["names"]["in_books"] == f"{p.first_name} {p.last_name}"


@pytest.fixture
def repeated_hour_evening(monkeypatch, request):
    """The evening played in the hour the October change repeats: the clock reads 02:30 CEST
    (00:30 UTC) on 2026-10-25, a millisecond more at each call, as the services stamp it."""
    import datetime as dt
    from itertools import count

    from django.utils import timezone

    start, ticks = dt.datetime(2026, 10, 25, 0, 30, tzinfo=dt.UTC), count(1)
    monkeypatch.setattr(timezone, "now", lambda: start + dt.timedelta(milliseconds=next(ticks)))
    return request.getfixturevalue("evening")


def test_a_time_moved_into_the_repeated_hour_is_said_with_its_offset(repeated_hour_evening):
    """QA: a coup settled at 02:30 CEST and its time moved in SQL by an hour, to 02:30 CET, read
    the same on both sides ("02:30:00 in the books, 02:30:00 in the audit trail"): the wall clock
    repeats that hour, so the desk gives each side its UTC offset. So for a bet's time."""
    from datetime import timedelta

    from django.utils import timezone

    from audit.views import _explain

    game, coups = repeated_hour_evening
    coup, hour = coups["tie"], timedelta(hours=1)
    assert timezone.localtime(coup.settled_at).utcoffset() == 2 * hour  # CEST, the first 02:30
    Coup.objects.filter(pk=coup.pk).update(settled_at=coup.settled_at + hour)
    [reason] = as_played(game.session)
    [line] = _explain({"reasons": [reason]})["lines"]
    books, trail = timezone.localtime(coup.settled_at + hour), timezone.localtime(coup.settled_at)
    assert f"{books:%H:%M:%S}" == f"{trail:%H:%M:%S}"  # the same clock, an hour apart
    assert line.endswith(f"Settled at: {books.isoformat(sep=' ', timespec='seconds')} in the books, "
                         f"{trail.isoformat(sep=' ', timespec='seconds')} in the audit trail.")  # fmt: skip
    assert "+01:00 in the books" in line and "+02:00 in the audit trail" in line
    Coup.objects.filter(pk=coup.pk).update(settled_at=coup.settled_at)

    bet = Bet.objects.get(coup=coups["plain"], patron_id=game.seat(5).pk)
    Bet.objects.filter(pk=bet.pk).update(at=bet.at + hour)
    [reason] = as_played(game.session)
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.endswith(f"{timezone.localtime(bet.at + hour).isoformat(sep=' ', timespec='seconds')} in the books, "
                         f"{timezone.localtime(bet.at).isoformat(sep=' ', timespec='seconds')} in the audit trail.")
    # Away from the change, the clock alone tells the sides apart, as before.
    Bet.objects.filter(pk=bet.pk).update(at=bet.at - 3 * hour)
    [reason] = as_played(game.session)
    [line] = _explain({"reasons": [reason]})["lines"]
    assert line.endswith(f"{timezone.localtime(bet.at - 3 * hour):%Y-%m-%d %H:%M:%S} in the books, "
                         f"{timezone.localtime(bet.at):%Y-%m-%d %H:%M:%S} in the audit trail.")
