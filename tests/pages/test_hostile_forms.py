"""Hostile form posts to every page form, as the role that may post it: never a 5xx; a
refusal is a 4xx and writes nothing (audit events and the rows of the game, the floor and
the books counted before and after).

Each endpoint is posted its valid form once per hostile case: one field replaced by a
hostile value, left out, sent twice, or sent as invalid UTF-8 in the raw body; ids of
objects that do not exist or are another table's (or casino's); a bad or reused
idempotency key. Each post runs in a savepoint rolled back after it, so one state serves
an endpoint's every case."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
from django.apps import apps
from django.db import connection, transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import AuditEvent, CagnotteCount, ControlRegister
from audit.reports import registers
from floor import services as floor_services
from floor.models import GamingDay, IdempotencyKey, MinimumChange, Seat, StaffChange, TableSession
from floor.roles import Role
from tables import services
from tables.models import Auction, Coup, Succession, SuccessionOffer
from tests.factories import PASSWORD, CasinoFactory, PatronFactory, SiteFactory
from tests.tables.conftest import TABLE_MODELS

pytestmark = pytest.mark.django_db

BIG = "9" * 30
OTHER_SCRIPT = "\u0661\u0662\u0663"  # Arabic-Indic 123 (int() and Decimal() read them)
# What each kind of field is sent (an id's other kinds of hostile values: Form.foreign). NUL
# bytes, repeated fields and invalid UTF-8 are refused for the whole form before any field
# is read (views_common.form_post): sent once per form, in its first field.
AMOUNT_HOSTILE = [BIG, "-1", "NaN", "1e309", "0x10", OTHER_SCRIPT, "9" * 100_000, ""]
ID_HOSTILE = [BIG, "-1", OTHER_SCRIPT, "9" * 100_000, "", "1.0"]
CHOICE_HOSTILE = ["NaN", "x" * 100_000, ""]
TEXT_HOSTILE = ["x" * 100_000, "", "<b>\u202e"]
AMOUNTS = {"amount", "amount_minimum", "amount_open", "amount_raise", "minimum", "maximum", "counted", "tips"}
CHOICES = {"quick", "rank", "suit", "draws", "side", "declared", "confirm", "burn_face_up", "date"}
TEXT = {"reason", "note", "number", "shoe_number", "shown_maximum", "current_capo_partita", "current_changeur"}
HOSTILE = [*AMOUNT_HOSTILE, "1\x00", "x" * 100_000, "<b>\u202e"]  # (the login's fields)
# Never a number (the numeric fields refuse them, whatever else is right in the form).
NOT_A_NUMBER = {BIG, "-1", "1.0", "NaN", "1e309", "0x10", OTHER_SCRIPT, "9" * 100_000}
LONE_SURROGATE = b"%ED%A0%80"  # U+D800 as UTF-8: not valid UTF-8
MISSING, TWICE, RAW, REUSED = object(), object(), object(), object()
REUSED_KEY = "0b8a3f4e-5c1d-4e2a-9f6b-7d0c1e2f3a4b"


@dataclass
class Form:
    url: str
    data: dict[str, str]
    user: object
    numeric: set[str] = field(default_factory=set)
    foreign: dict[str, list[str]] = field(default_factory=dict)  # ids that are not this form's


COUNTED = [
    *(apps.get_model("tables", name) for name in TABLE_MODELS), AuditEvent, Seat, CagnotteCount, ControlRegister,
    GamingDay, TableSession, MinimumChange, StaffChange, Succession, Auction,
]
COUNTED_NAMES = [*(m.__name__ for m in COUNTED), "SuccessionOffer answered"]


def counts() -> tuple[int, ...]:
    """The rows of the game, the floor and the books, and the audit events (one query)."""
    counted = ", ".join(f'(SELECT count(*) FROM "{m._meta.db_table}")' for m in COUNTED)
    answered = f'(SELECT count(*) FROM "{SuccessionOffer._meta.db_table}" WHERE status <> %s)'
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {counted}, {answered}", ["pending"])
        return cursor.fetchone()


def _post(client, form: Form, name: str, value) -> int:
    data = {**form.data, "idempotency_key": str(uuid.uuid4())}
    if value is MISSING:
        data.pop(name, None)
    elif value is TWICE:
        return _raw(client, form.url, _encoded([*data.items(), (name, data.get(name, "1"))]))
    elif value is RAW:
        body = _encoded([(k, v) for k, v in data.items() if k != name])
        return _raw(client, form.url, body + b"&" + quote(name).encode() + b"=" + LONE_SURROGATE + b"&" + LONE_SURROGATE + b"=1")
    elif value is REUSED:  # the key of another form this user sent (its answer stored)
        IdempotencyKey.objects.create(user=form.user, key=REUSED_KEY, fingerprint="0" * 64, method="POST",
                                      path="/tablet/elsewhere/", status_code=200, response_body={"ok": True},
                                      completed=True)  # fmt: skip
        data["idempotency_key"] = REUSED_KEY
    else:
        data[name] = value
    return client.post(form.url, data, HTTP_HX_REQUEST="true").status_code


def _encoded(pairs) -> bytes:
    return "&".join(f"{quote(k)}={quote(str(v))}" for k, v in pairs).encode()


def _raw(client, url: str, body: bytes) -> int:
    return client.generic(
        "POST", url, body, content_type="application/x-www-form-urlencoded", HTTP_HX_REQUEST="true"
    ).status_code


def check(client, form: Form) -> list[str]:
    """Every hostile case of `form`; what went wrong, said case by case."""
    failures = []
    cases: list[tuple[str, object]] = []
    for name in form.data:
        kind = AMOUNT_HOSTILE if name in AMOUNTS else CHOICE_HOSTILE if name in CHOICES else TEXT_HOSTILE if name in TEXT else ID_HOSTILE
        cases += [(name, v) for v in [*kind, MISSING, *form.foreign.get(name, [])]]
    first = next(iter(form.data), "idempotency_key")
    cases += [(first, "1\x00"), (first, TWICE), (first, RAW)]
    # (missing or blank, the key leaves the post unprotected, as an old page's)
    cases += [("idempotency_key", v) for v in ("x" * 300, "a,b", "\u00e9", TWICE, REUSED)]
    before = counts()  # (each post is rolled back: the same state for all)
    for name, value in cases:
        with transaction.atomic():
            try:
                status = _post(client, form, name, value)
            except Exception as exc:  # a 500: said as one, with its cause
                status = 500
                failures.append(f"{form.url} {name}={_said(value)}: raised {exc!r}")
                transaction.set_rollback(True)
                continue
            after = counts()
            transaction.set_rollback(True)
        said = f"{form.url} {name}={_said(value)}: {status}"
        if status >= 500:
            failures.append(said)
        elif status >= 400 and after != before:
            wrote = [n for n, b, a in zip(COUNTED_NAMES, before, after, strict=True) if a != b]
            failures.append(f"{said}, wrote {wrote}")
        elif status < 400 and (
            (name in form.numeric and (value in NOT_A_NUMBER or value in form.foreign.get(name, [])))
            or value in (TWICE, RAW)
            or name == "idempotency_key"
        ):
            failures.append(f"{said}: accepted")
    return failures


def _said(value) -> str:
    if value is MISSING:
        return "<missing>"
    if value is TWICE:
        return "<twice>"
    if value is RAW:
        return "<invalid utf-8>"
    if value is REUSED:
        return "<reused>"
    text = repr(value)
    return text if len(text) < 40 else f"{text[:20]}...({len(value)} chars)"


# --------------------------------------------------------------------------- the states


PUNTA_WINS = ["7H", "6S", "KH", "KD"]


def _lose(game) -> Succession:
    services.coup_record(session=game.session, by=game.capo, cards=PUNTA_WINS, punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    return Succession.objects.get(session=game.session)


TABLET = {
    # action: (state, fields, numeric fields)
    "shoe-load": ("base", {"number": "S-9", "burn_face_up": "KH"}, set()),
    "bank-open": ("base", {"patron": "{seat2}", "amount": "500"}, {"patron", "amount"}),
    "bank-withdraw": ("base", {"bank": "{bank}"}, {"bank"}),
    "bank-raise": ("base", {"bank": "{bank}", "amount": "2000"}, {"bank", "amount"}),
    "coup-open": ("base", {}, set()),
    "bet": ("betting", {"coup": "{coup}", "patron": "{seat2}", "quick": "custom", "amount": "150",
                        "amount_minimum": "100", "amount_open": "1000"}, {"coup", "patron", "amount"}),
    "rien-ne-va-plus": ("bet", {"coup": "{coup}"}, {"coup"}),
    "bet-withdraw": ("bet", {"coup": "{coup}", "patron": "{seat2}"}, {"coup", "patron"}),
    "coup-annul": ("bet", {"coup": "{coup}", "reason": "misdeal"}, {"coup"}),
    "card": ("dealing", {"coup": "{coup}", "rank": "7", "suit": "H", "expect_cards": "0"},
             {"coup", "expect_cards"}),
    "punta": ("dealing", {"coup": "{coup}", "draws": "true"}, {"coup"}),
    "banker-stand": ("dealing", {"coup": "{coup}"}, {"coup"}),
    "reconstruction-card": ("dealing", {"coup": "{coup}", "rank": "7", "suit": "H", "expect_cards": "0"},
                            {"coup", "expect_cards"}),
    "reconstruction-decide": ("dealing", {"coup": "{coup}", "side": "punta", "draws": "true"}, {"coup"}),
    "regola": ("base", {"patron": "{seat2}", "declared": "true"}, {"patron"}),
    "bar": ("base", {"patron": "{seat3}", "reason": "faux tirage"}, {"patron"}),
    "void": ("base", {"rank": "7", "suit": "H", "reason": "shown"}, set()),
    "offer-accept": ("succession", {"succession": "{succession}", "patron": "{seat2}", "amount": "100"},
                     {"succession", "patron", "amount"}),
    "offer-pass": ("succession", {"succession": "{succession}", "patron": "{seat2}"}, {"succession", "patron"}),
    "auction-open": ("unclaimed", {}, set()),
    "auction-bid": ("auction", {"auction": "{auction}", "patron": "{seat3}", "quick": "", "amount": "300",
                                "amount_minimum": "100", "amount_raise": "200"}, {"auction", "patron", "amount"}),
    "auction-close": ("auction", {"auction": "{auction}"}, {"auction"}),
}


def _tablet_state(game, state: str) -> dict[str, str]:
    ids = {"seat2": game.seat(2).pk, "seat3": game.seat(3).pk, "bank": game.bank.pk}
    if state in ("betting", "bet", "dealing"):
        coup = services.coup_open(session=game.session, by=game.capo)
        ids["coup"] = coup.pk
        if state in ("bet", "dealing"):
            services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=100_00)
        if state == "dealing":
            services.rien_ne_va_plus(coup=coup, by=game.capo)
    if state in ("succession", "unclaimed", "auction"):
        succ = _lose(game)
        ids["succession"] = succ.pk
        if state in ("unclaimed", "auction"):
            for n in range(2, 9):
                services.offer_pass(succession=succ, by=game.capo, patron=game.seat(n))
        if state == "auction":
            ids["auction"] = services.auction_open(session=game.session, by=game.capo).pk
    return {k: str(v) for k, v in ids.items()}


@pytest.mark.parametrize("state", sorted({state for state, _data, _numeric in TABLET.values()}))
def test_tablet_forms(client_for, make_game, state):
    """Every tablet form that the game in `state` takes, posted by its Capo Partita."""
    other = make_game("venezia", standing=0)  # another table: its coup, bank, succession are not this one's
    game = make_game("venezia", standing=0)
    ids, theirs = _tablet_state(game, state), _tablet_state(other, state)
    failures = []
    for action, (its_state, data, numeric) in TABLET.items():
        if its_state != state:
            continue
        form = Form(
            f"/tablet/sessions/{game.session.pk}/{action}/",
            {k: v.format(**ids) for k, v in data.items()},
            game.capo,
            numeric,
            # another table's objects, and ids of nothing at all
            {k: [v.format(**theirs), "0", str(2**63)] for k, v in data.items() if k in numeric and v.startswith("{")},
        )
        failures += check(client_for(game.capo), form)
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- the floor


@pytest.fixture
def floor_forms(make_game, make_user, site, direzione, commissario):
    game = make_game("venezia")
    other = make_game("venezia")
    free_capo = make_user("free_capo", Role.CAPO_PARTITA)
    free_changeur = make_user("free_changeur", Role.CHANGEUR)
    spare = floor_services.table_create(casino=site.casino, site=site, number=50, by=direzione)
    far = SiteFactory(casino=CasinoFactory(name="Altrove", code="altrove"))
    session, table = game.session, game.session.table
    seat_pk = str(session.seats.get(patron=game.seat(5)).pk)
    other_seat = other.session.seats.get(patron=other.seat(5))
    newcomer = PatronFactory()
    ids = lambda *extra: ["0", *extra]  # noqa: E731
    t = f"/floor/tables/{table.pk}"
    staff = {"current_capo_partita": str(session.capo_partita_id), "current_changeur": str(session.changeur_id)}
    return {
        "open": Form(f"/floor/tables/{spare.pk}/open/",
                     {"capo_partita": str(free_capo.pk), "changeur": str(free_changeur.pk), "shoe_number": "S-50",
                      "minimum": "100", "maximum": "5000"},
                     commissario, {"capo_partita", "changeur", "minimum", "maximum"},
                     {"capo_partita": ids(str(game.capo.pk)), "changeur": ids(str(game.session.changeur_id))}),
        "minimum": Form(f"{t}/minimum/", {"session": str(session.pk), "minimum": "200", "maximum": "9000",
                                         "shown_maximum": "", "reason": "busy"},
                        commissario, {"session", "minimum", "maximum"}, {"session": ids(str(other.session.pk))}),
        "staff": Form(f"{t}/staff/", {"session": str(session.pk), **staff, "capo_partita": str(free_capo.pk),
                                      "changeur": str(free_changeur.pk), "reason": "relief"},
                      commissario, {"session", "capo_partita", "changeur"},
                      {"session": ids(str(other.session.pk)), "capo_partita": ids(), "changeur": ids()}),
        "interrupt": Form(f"{t}/interrupt/", {"session": str(session.pk), "reason": "fight"}, commissario,
                          {"session"}, {"session": ids(str(other.session.pk))}),
        "resume": Form(f"{t}/resume/", {"session": str(session.pk), "reason": "calm"}, commissario,
                       {"session"}, {"session": ids(str(other.session.pk))}),
        "close": Form(f"{t}/close/", {"session": str(session.pk), "confirm": "yes"}, commissario,
                      {"session"}, {"session": ids(str(other.session.pk))}),
        "seat-assign": Form(f"{t}/seat-assign/", {"patron": str(newcomer.pk), "session": str(session.pk),
                                                  "seat_number": "standing"},
                            commissario, {"patron", "session", "seat_number"},
                            {"session": ids(str(other.session.pk)), "patron": ids()}),
        "seat-release": Form(f"{t}/seat-release/", {"seat": seat_pk}, commissario, {"seat"},
                             {"seat": ids(str(other_seat.pk))}),
        "day-open": Form(f"/floor/casinos/{site.casino.pk}/open-day/", {"date": ""}, commissario, set(),
                         {"date": ["9999-12-31", "2026-02-30", "\u0662\u0660\u0662\u0666-\u0661\u0662-\u0660\u0661", "+2026-12-01"]}),
        "day-open-elsewhere": Form(f"/floor/casinos/{far.casino.pk}/open-day/", {"date": "1999-01-01"}, commissario),
        "day-close": Form(f"/floor/days/{session.gaming_day_id}/close/", {"confirm": "yes"}, commissario),
    }


def test_floor_forms(client_for, floor_forms):
    """Every form of the floor dashboard, posted by the Commissario."""
    failures = [failure for form in floor_forms.values() for failure in check(client_for(form.user), form)]
    assert not failures, "\n".join(failures)


def test_the_dashboards_seat_choice(client_for, game):
    """The drawing's link that picks a seat (?table=&seat=): a number of thousands of digits
    was a 500."""
    client = client_for(game.commissario)
    for seat in [*ID_HOSTILE, "1\x00", "x" * 100_000]:
        response = client.get("/floor/", {"table": game.session.table_id, "seat": seat})
        assert response.status_code == 200, (_said(seat), response.status_code)


# --------------------------------------------------------------------------- the desk's books


@pytest.fixture
def books(make_game, direzione, auditor, commissario, direzione_two):
    game = make_game("venezia")
    day = game.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    table = game.session.table
    far_table = floor_services.table_create(
        casino=(far := SiteFactory(casino=CasinoFactory(name="Altrove", code="altrove"))).casino, site=far,
        number=7, by=direzione,
    )  # fmt: skip
    count = registers.cagnotte_count_record(gaming_day=day, table=table, by=direzione, witness=auditor, counted=0, note="")
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    ids = lambda *extra: ["0", str(2**63), *extra]  # noqa: E731
    outsider_staff = [str(game.capo.pk), str(direzione.pk)]
    return {
        "cagnotte": Form(f"/desk/days/{day.pk}/cagnotte/",
                         {"table": str(table.pk), "witness": str(auditor.pk), "counted": "12.50", "tips": "3.20",
                          "note": "box"},
                         direzione, {"table", "witness", "counted", "tips"},
                         {"table": ids(str(far_table.pk)), "witness": ids(*outsider_staff)}),
        "correct": Form(f"/desk/counts/{count.pk}/correct/",
                        {"witness": str(auditor.pk), "counted": "3", "tips": "1", "note": "x"},
                        direzione, {"witness", "counted", "tips"}, {"witness": ids(*outsider_staff)}),
        "prepare": Form(f"/desk/days/{day.pk}/register/", {}, direzione),
        "sign": Form(f"/desk/registers/{reg.pk}/sign/", {}, direzione_two),
        "register-correct": Form(f"/desk/registers/{reg.pk}/correct/", {"reason": "recount"}, direzione),
    }


@pytest.fixture
def direzione_two(make_user):
    return make_user("direzione_two", Role.DIREZIONE)


def test_desk_forms(client_for, books):
    """Every form of the Direzione's books on the auditor's desk."""
    failures = [failure for form in books.values() for failure in check(client_for(form.user), form)]
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- the key, the login


def test_a_key_reused_for_another_form_writes_nothing(client_for, game):
    client = client_for(game.capo)
    key = str(uuid.uuid4())
    url = f"/tablet/sessions/{game.session.pk}/"
    assert client.post(url + "regola/", {"patron": game.seat(2).pk, "declared": "true", "idempotency_key": key}).status_code == 200
    before = counts()
    reused = client.post(url + "regola/", {"patron": game.seat(3).pk, "declared": "true", "idempotency_key": key})
    assert 400 <= reused.status_code < 500
    assert counts() == before
    elsewhere = client.post(url + "coup-open/", {"idempotency_key": key})
    assert 400 <= elsewhere.status_code < 500 and counts() == before
    assert not Coup.objects.filter(session=game.session).exists()
    assert IdempotencyKey.objects.filter(key=key).count() == 1


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
@pytest.mark.parametrize("name", ["username", "password", "otp_token"])
def test_the_login_forms(client, commissario, settings, url, name):
    """The login page (with the second factor asked of the Commissario, his authenticator
    enrolled): a hostile username or password (the right code then), or a hostile code
    after the right password, is a page that says no, never a 500 or a login."""
    settings.MFA_ROLES = ["commissario"]
    settings.SECURITY_EVENTS = True  # (a failed login is on record: that write must hold too)
    settings.LOGIN_MAX_FAILURES = settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 10**6
    TOTPDevice.objects.create(user=commissario, name="phone", confirmed=True)
    data = {"username": commissario.username, "password": PASSWORD, "otp_token": "123456"}
    commissario.is_staff = True  # (the admin's login asks for staff)
    commissario.save(update_fields=["is_staff"])
    form = Form(url, data, commissario)
    for value in [*HOSTILE, MISSING, TWICE, RAW]:
        if value in (TWICE, RAW):
            status = _post(client, form, name, value)
        else:
            posted = {k: v for k, v in data.items() if not (k == name and value is MISSING)}
            if value is not MISSING:
                posted[name] = value
            status = client.post(url, posted).status_code
        assert status < 500 and status != 302, (name, _said(value), status)
        assert "_auth_user_id" not in client.session
