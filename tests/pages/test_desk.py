"""The auditor's desk through the test client: who reads it, the report with its files and
their SHA-256, the download, Verify (ok, then failed after a stored file is tampered with),
the whole trail's verification, the direzione's cagnotte count and control register."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.utils.html import escape

from audit.models import AuditEvent, CagnotteCount, ControlRegister, DayReport
from audit.tasks import report_build
from floor import services as floor_services
from floor.models import GamingDay, IdempotencyKey
from floor.roles import Role
from tests.factories import UserFactory
from tests.pages.repeated_hour import MOMENTS
from tests.pages.test_quality import PAGE_BUDGET, _asset_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def closed(game, media, django_capture_on_commit_callbacks):
    """The game's day closed (its session closed with it) and its version-1 report built."""
    day = game.session.gaming_day
    with django_capture_on_commit_callbacks(execute=True):
        floor_services.gaming_day_close(gaming_day=day, by=game.commissario, open_sessions="close")
    day.refresh_from_db()
    report_build.delay(day.pk)  # the close sends it by name (send_task), which eager mode skips
    report = DayReport.objects.get(gaming_day=day)
    assert report.status == "done", report.error
    return report


def pages(report) -> list[str]:
    return ["/desk/", f"/desk/days/{report.gaming_day_id}/", "/desk/verify/", f"/desk/reports/{report.pk}/"]


def test_the_desk_for_its_readers_only(client_for, closed, auditor, direzione, commissario, capo_partita, outsider):
    for user in (auditor, direzione, commissario):
        for url in pages(closed):
            assert client_for(user).get(url).status_code == 200, (user, url)
    for user in (capo_partita, outsider):
        for url in [*pages(closed), f"/desk/reports/{closed.pk}/files/pdf/"]:
            assert client_for(user).get(url).status_code == 403, (user, url)
        assert client_for(user).post(f"/desk/reports/{closed.pk}/verify/").status_code == 403


def test_the_list_shows_days_and_report_status(client_for, closed, auditor):
    html = client_for(auditor).get("/desk/").content.decode()
    assert closed.gaming_day.date.isoformat() in html
    assert "closed" in html and "v1" in html and "ready" in html


def test_the_day_shows_the_files_with_their_sha256(client_for, closed, auditor):
    html = client_for(auditor).get(f"/desk/days/{closed.gaming_day_id}/").content.decode()
    for f in closed.files.all():
        assert f.sha256 in html
        assert f"/desk/reports/{closed.pk}/files/{f.format}/" in html
    assert "Verify" in html
    assert "Cagnotte count" in html and 'name="counted"' not in html  # he reads the books, writes nothing


def test_download_streams_the_stored_bytes_with_the_checksum(client_for, closed, auditor):
    f = closed.files.get(format="pdf")
    response = client_for(auditor).get(f"/desk/reports/{closed.pk}/files/pdf/")
    assert response.status_code == 200 and response.streaming
    body = b"".join(response.streaming_content)
    assert body == (Path(settings.MEDIA_ROOT) / f.path).read_bytes()
    assert response["X-Checksum-SHA256"] == f.sha256 == hashlib.sha256(body).hexdigest()
    assert response["Content-Type"] == "application/pdf"
    assert "attachment" in response["Content-Disposition"]


def test_verify_ok_then_failed_after_tampering(client_for, closed, auditor):
    client = client_for(auditor)
    events, keys = AuditEvent.objects.count(), IdempotencyKey.objects.count()
    response = client.post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Verified" in html and 'class="verify-result ok"' in html

    f = closed.files.get(format="csv")
    path = Path(settings.MEDIA_ROOT) / f.path
    path.write_bytes(path.read_bytes() + b"tampered\n")
    html = client.post(f"/desk/reports/{closed.pk}/verify/").content.decode()  # the whole page
    assert "Verification failed" in html and 'class="verify-result err"' in html
    assert "The CSV file&#x27;s SHA-256 differs" in html
    # Verifying writes nothing: no event, no stored idempotent answer.
    assert AuditEvent.objects.count() == events and IdempotencyKey.objects.count() == keys


def test_verify_says_what_was_recorded_after_the_report(client_for, closed, auditor):
    from django.db import transaction

    from audit.services import record

    session = closed.gaming_day.sessions.get()
    with transaction.atomic():
        record(stream=f"gaming_day:{closed.gaming_day_id}", actor=None, action="late.event", data={})
        for _n in range(2):
            record(stream=f"table_session:{session.pk}", actor=None, action="late.event", data={})
    html = client_for(auditor).post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true").content.decode()
    assert 'class="verify-result ok"' in html and "Recorded after this report" in html
    said = re.sub(r"<[^>]+>", "", html)  # each stream a link to its events
    # Said in words (it said "gaming_day:7: 1"), each stream with its count's plural.
    number = session.table.number
    assert f"The gaming day&#x27;s floor: 1 event, table {number} session {session.number}: 2 events." in said
    assert f"gaming_day:{closed.gaming_day_id}" not in html and f"table_session:{session.pk}" not in html
    italian = client_for(auditor).post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true",
                                       HTTP_ACCEPT_LANGUAGE="it").content.decode()  # fmt: skip
    assert (f"La sala della giornata di gioco: 1 evento, tavolo {number} sessione {session.number}: 2 eventi."
            in re.sub(r"<[^>]+>", "", italian))  # fmt: skip


def test_verify_says_the_day_s_books_recorded_after_a_version_with_the_register(
    client_for, closed, direzione, auditor, make_user, django_capture_on_commit_callbacks
):
    """Walk of the end of day: a count corrected after version 2 (which seals the day's books)
    was listed as "day_books:1: 1"."""
    from audit.reports import registers

    day = closed.gaming_day
    count = registers.cagnotte_count_record(gaming_day=day, table=day.sessions.get().table, by=direzione,
                                            witness=auditor, counted=0)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=make_user("direzione_two", Role.DIREZIONE))
    v2 = DayReport.objects.get(gaming_day=day, version=2)
    registers.cagnotte_count_correct(count=count, by=direzione, witness=auditor, counted=1_00, note="recount")
    html = client_for(auditor).post(f"/desk/reports/{v2.pk}/verify/", HTTP_HX_REQUEST="true").content.decode()
    assert 'class="verify-result ok"' in html
    assert "The day&#x27;s books: 1 event." in re.sub(r"<[^>]+>", "", html) and f"day_books:{day.pk}" not in html
    italian = client_for(auditor).post(f"/desk/reports/{v2.pk}/verify/", HTTP_HX_REQUEST="true",
                                       HTTP_ACCEPT_LANGUAGE="it").content.decode()  # fmt: skip
    assert "I libri della giornata: 1 evento." in re.sub(r"<[^>]+>", "", italian)


def test_the_streams_recorded_after_a_report_are_said_by_their_patterns():
    """The day's books (which a version with the control register seals), the casino, and a
    stream of an unknown pattern or of another day, which stays as it is."""
    from django.utils import translation

    from audit.views import _later_events_words
    from floor.models import Casino

    report = DayReport(gaming_day=GamingDay(pk=7, casino=Casino(pk=3)),
                       sealed_heads=[["day_books:7", 12, "a" * 64], ["casino:3", 1, "b" * 64],
                                     ["day_books:8", 3, "c" * 64], ["somewhere:7", 40, "d" * 64],
                                     ["table_session:999999", 7, "e" * 64]])  # fmt: skip
    later = {"day_books:7": 4, "casino:3": 1, "day_books:8": 1, "somewhere:7": 2, "table_session:999999": 1}
    # each links to its events recorded after the report: its stream from the sealed seq + 1, oldest first
    assert [link for link, _said in _later_events_words(later, report)] == [
        "/desk/events/?stream=day_books%3A7&seq_min=13&order=oldest",
        "/desk/events/?stream=casino%3A3&seq_min=2&order=oldest",
        "/desk/events/?stream=day_books%3A8&seq_min=4&order=oldest",
        "/desk/events/?stream=somewhere%3A7&seq_min=41&order=oldest",
        "/desk/events/?stream=table_session%3A999999&seq_min=8&order=oldest",
    ]
    assert [said for _name, said in _later_events_words(later, report)] == [
        "the day's books: 4 events", "the casino: 1 event", "day_books:8: 1 event", "somewhere:7: 2 events",
        "table session 999999: 1 event",
    ]  # fmt: skip
    with translation.override("it"):
        assert [said for _name, said in _later_events_words({"day_books:7": 1, "casino:3": 2}, report)] == [
            "i libri della giornata: 1 evento", "il casinò: 2 eventi"
        ]  # fmt: skip


def test_what_was_recorded_after_the_report_leads_to_its_events(client_for, closed, auditor):
    """The verification's "recorded after this report" names the streams and their count of
    later events: each leads to the desk's events page of its stream from the seq the report
    sealed it at plus one, oldest first: exactly the events recorded after the report, in the
    order they were recorded (it listed the whole stream, the later events among the rest)."""
    from django.db import transaction

    from audit.services import record

    stream = closed.gaming_day.audit_stream  # sealed by the report's first version
    [sealed] = [seq for name, seq, _hash in closed.sealed_heads if name == stream]
    assert sealed > 1  # the stream had events before the report: the link must leave them out
    late = []
    for what in ("a signature", "a correction"):
        with transaction.atomic():
            late.append(record(stream=stream, actor=auditor, action="late.event", data={"what": what}))
    client = client_for(auditor)
    html = client.post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true").content.decode()
    link = f"/desk/events/?stream=gaming_day%3A{closed.gaming_day_id}&seq_min={sealed + 1}&order=oldest"
    assert f'<a href="{escape(link)}">The gaming day&#x27;s floor: 2 events</a>' in html
    events = client.get(link).content.decode()
    assert re.findall(r'<tr data-event="(\d+)">', events) == [str(e.pk) for e in late]
    assert "2 events" in events  # counted, exactly


def test_the_report_fragment_polls_while_the_report_is_built(client_for, closed, auditor):
    DayReport.objects.filter(pk=closed.pk).update(status="pending", task_id="")
    html = client_for(auditor).get(f"/desk/reports/{closed.pk}/").content.decode()
    assert 'hx-trigger="every 2s"' in html and "<progress" in html
    DayReport.objects.filter(pk=closed.pk).update(status="done")
    html = client_for(auditor).get(f"/desk/reports/{closed.pk}/").content.decode()
    assert "hx-trigger" not in html and "<progress" not in html


def test_the_whole_trail_verifies(client_for, closed, auditor):
    events = AuditEvent.objects.count()
    html = client_for(auditor).post("/desk/verify/", HTTP_HX_REQUEST="true").content.decode()
    assert "The audit trail is intact" in html
    streams = re.search(r"streams checked</dt><dd>(\d+)", html)
    assert streams and int(streams.group(1)) >= 2
    assert AuditEvent.objects.count() == events


def test_direzione_counts_prepares_and_two_sign(client_for, closed, direzione, make_user, auditor):
    day = closed.gaming_day
    table = day.sessions.get().table
    client = client_for(direzione)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "Cagnotte count" in html and "Control register" in html
    # the witnesses offered: the management and the auditors, never the table's staff
    witnesses = re.search(r'name="witness"[^>]*>(.*?)</select>', html, re.S).group(1)
    offered = {int(pk) for pk in re.findall(r'value="(\d+)"', witnesses)}
    session = day.sessions.get()
    assert auditor.pk in offered and direzione.pk not in offered
    assert not offered & {session.capo_partita_id, session.changeur_id}
    data = {"table": table.pk, "counted": "0", "tips": "0", "witness": auditor.pk, "note": "",
            "idempotency_key": str(uuid.uuid4())}  # fmt: skip
    response = client.post(f"/desk/days/{day.pk}/cagnotte/", data)
    assert response.status_code == 200, response.content.decode()
    assert client.post(f"/desk/days/{day.pk}/cagnotte/", data).status_code == 200  # the same key: entered once
    assert CagnotteCount.objects.count() == 1
    response = client.post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 200, response.content.decode()
    reg = ControlRegister.objects.get()
    # a draft that agrees with the counts is not offered to be brought up to date
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    # people by their names, as in the reports, not by their usernames
    assert f"by {escape(direzione.get_full_name())}, witness {escape(auditor.get_full_name())}" in html
    assert f"<dt>prepared by</dt><dd>{escape(direzione.get_full_name())}</dd>" in html
    assert "Bring the register up to date" not in html and "Write the control register" not in html
    assert client.post(f"/desk/registers/{reg.pk}/sign/", {"idempotency_key": str(uuid.uuid4())}).status_code == 200
    again = client.post(f"/desk/registers/{reg.pk}/sign/", {"idempotency_key": str(uuid.uuid4())})
    assert again.status_code == 409 and "another person" in again.content.decode()
    second = make_user("direzione_two", Role.DIREZIONE)
    assert client_for(second).post(f"/desk/registers/{reg.pk}/sign/", {"idempotency_key": str(uuid.uuid4())}).status_code == 200
    reg.refresh_from_db()
    assert reg.signed and DayReport.objects.filter(gaming_day=day, version=2).exists()
    # Signed and agreeing with the counts: no correction offered, and one posted is refused.
    assert f"/desk/registers/{reg.pk}/correct/" not in client.get(f"/desk/days/{day.pk}/").content.decode()
    unchanged = client.post(f"/desk/registers/{reg.pk}/correct/",
                            {"reason": "again", "idempotency_key": str(uuid.uuid4())})  # fmt: skip
    assert unchanged.status_code == 409 and "correct a count first" in unchanged.content.decode()
    assert not ControlRegister.objects.filter(corrects=reg).exists()
    # A count corrected after the signatures: the page says the register is behind and
    # takes its correction, which needs two new signatures.
    from audit.reports import registers

    count = CagnotteCount.objects.get()
    registers.cagnotte_count_correct(count=count, by=direzione, witness=auditor, counted=1_00, note="recount")
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "A count was corrected after this register was signed" in html
    refused = client.post(f"/desk/registers/{reg.pk}/correct/", {"reason": "", "idempotency_key": str(uuid.uuid4())})
    assert refused.status_code == 400
    response = client.post(f"/desk/registers/{reg.pk}/correct/",
                           {"reason": "box recounted", "idempotency_key": str(uuid.uuid4())})  # fmt: skip
    assert response.status_code == 200, response.content.decode()
    new = ControlRegister.objects.get(corrects=reg)
    assert new.status == "draft" and new.reason == "box recounted" and new.total == 1_00
    assert "A count was corrected" not in client.get(f"/desk/days/{day.pk}/").content.decode()


def test_the_auditor_cannot_write_the_books(client_for, closed, auditor):
    day = closed.gaming_day
    response = client_for(auditor).post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 403 and not ControlRegister.objects.exists()


def test_the_auditor_reads_the_books_as_they_stand_without_their_forms(client_for, closed, auditor, direzione):
    """The cagnotte counts and the control register of a closed day are on the desk for the
    auditors too, read only: the figures, who counted and witnessed, the signatures; none of
    the Direzione's forms (a table not counted yet says so)."""
    from audit.reports import registers

    day = closed.gaming_day
    client = client_for(auditor)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "The Direzione's books" in html and "not counted yet" in html
    assert "/cagnotte/" not in html and "/register/" not in html
    table = day.sessions.get().table
    registers.cagnotte_count_record(gaming_day=day, table=table, by=direzione, witness=auditor, counted=0)
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "witness" in html and "one signature" in html and "Control register" in html
    for action in ("/correct/", "/sign/", "/register/", "/cagnotte/"):
        assert action not in html, action
    assert 'name="witness"' not in html and "Sign second" not in html
    # the Direzione has the forms
    html = client_for(direzione).get(f"/desk/days/{day.pk}/").content.decode()
    assert f"/desk/registers/{reg.pk}/sign/" in html and "/correct/" in html


def test_home_leads_auditor_and_direzione_to_the_desk(client_for, auditor, direzione):
    for user in (auditor, direzione):
        assert 'href="/desk/"' in client_for(user).get("/").content.decode()


def test_the_commissario_is_led_to_the_days_books_where_he_deposits_the_unclaimed(client_for, make_game, capo_partita):
    """He records the unclaimed stakes and winnings on the day's desk page (RULES.md §6): his
    home page and the floor's open day lead there; the Capo Partita's home does not."""
    game = make_game("venezia")
    client = client_for(game.commissario)
    assert 'href="/desk/"' in client.get("/").content.decode()
    day = game.session.gaming_day
    assert f'href="/desk/days/{day.pk}/#unclaimed-title"' in client.get("/floor/").content.decode()
    assert client.get(f"/desk/days/{day.pk}/").status_code == 200
    assert 'href="/desk/"' not in client_for(capo_partita).get("/").content.decode()


def test_no_inline_script_csp_and_weight(client_for, closed, direzione):
    client = client_for(direzione)
    for url in pages(closed)[:3]:
        response = client.get(url)
        html = response.content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), url
        assert "<style" not in html and " style=" not in html, url
        assert not re.search(r"\son[a-z]+=", html), url
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, url
        assert len(html.encode()) + _asset_bytes(html) < PAGE_BUDGET, url


def test_the_desk_in_italian(client_for, closed, auditor):
    html = client_for(auditor).get(f"/desk/days/{closed.gaming_day_id}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert 'lang="it"' in html and ">Verifica</button>" in html
    # the files' links are actions too, in the imperative as the buttons ("Scaricare PDF" was left)
    assert re.search(r'data-format="pdf">\s*Scarica PDF\s*</a>', html) and "Scaricare" not in html


def test_the_close_and_the_build_in_the_repeated_hour_say_their_offset(client_for, closed, auditor):
    """QA: on the October night the clock reads 02:00-02:59 twice. A day closed at 02:30 CEST
    and one closed at 02:30 CET both read "closed on 2026-10-25 at 02:30", a report built then
    "Built at 2026-10-25 02:30:15": in that hour the time carries its UTC offset, as in the
    report (and in both languages); any other time reads as before."""
    client = client_for(auditor)
    for m in MOMENTS:
        GamingDay.objects.filter(pk=closed.gaming_day_id).update(closed_at=m.at)
        DayReport.objects.filter(pk=closed.pk).update(built_at=m.at)
        for language, closed_on, at, built_at in (
            ("en", "closed on", "at", "Built at"), ("it", "chiusa il", "alle", "Prodotto il")
        ):
            html = client.get(f"/desk/days/{closed.gaming_day_id}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
            heading = re.search(r"<h1>(.*?)</h1>", html, re.S).group(1)
            assert re.search(rf"{closed_on} ([^<]*)</small>", heading).group(1) == f"{m.day} {at} {m.minute}", heading
            assert re.search(rf"{built_at} ([^<·]*)", html).group(1).strip() == f"{m.day} {m.second}", m


def test_a_file_format_that_is_not_a_word_is_not_found(client_for, auditor, api_client_for):
    """Exploratory testing: a NUL byte in the format reached PostgreSQL (a 500)."""
    assert client_for(auditor).get("/desk/reports/1/files/%00/").status_code == 404
    assert api_client_for(auditor).get("/api/reports/1/files/%00/").status_code == 404


def test_direzione_corrects_a_miscount_on_the_desk(client_for, closed, direzione, auditor):
    day = closed.gaming_day
    table = day.sessions.get().table
    client = client_for(direzione)
    key = str(uuid.uuid4())
    client.post(f"/desk/days/{day.pk}/cagnotte/",
                {"table": table.pk, "counted": "9", "tips": "0", "witness": auditor.pk, "note": "",
                 "idempotency_key": key})  # fmt: skip
    first = CagnotteCount.objects.get()
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "Correct this count" in html and f"/desk/counts/{first.pk}/correct/" in html
    data = {"counted": "9.60", "witness": auditor.pk, "note": "", "idempotency_key": str(uuid.uuid4())}
    refused = client.post(f"/desk/counts/{first.pk}/correct/", data)
    assert refused.status_code == 400 and CagnotteCount.objects.count() == 1
    data["note"], data["idempotency_key"] = "box recounted", str(uuid.uuid4())
    response = client.post(f"/desk/counts/{first.pk}/correct/", data)
    assert response.status_code == 200, response.content.decode()
    assert "Count of table 1 corrected: €\xa09.60; tips €\xa00.00." in response.content.decode()
    new = CagnotteCount.objects.get(corrects=first)
    assert (new.counted, new.note, new.witness) == (9_60, "box recounted", auditor)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "corrects an earlier count: box recounted" in html
    assert "€\xa09.60" in html and "€\xa00.00" in html  # the books show the cents, always (expected: none)
    again = client.post(f"/desk/counts/{first.pk}/correct/", {**data, "idempotency_key": str(uuid.uuid4())})
    assert again.status_code == 409 and CagnotteCount.objects.count() == 2
    assert client_for(auditor).post(f"/desk/counts/{new.pk}/correct/", data).status_code == 403


def test_a_day_with_no_play_gets_its_register_on_the_desk(client_for, direzione, casino, commissario, media):
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    client = client_for(direzione)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "No table played on this day." in html
    button = re.search(r"<button type=\"submit\"([^>]*)>Write the control register", html)
    assert button and "disabled" not in button.group(1)
    response = client.post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 200, response.content.decode()
    assert ControlRegister.objects.get(gaming_day=day).total == 0


def test_the_desks_verifications_share_the_apis_budget(client_for, closed, auditor, monkeypatch):
    """Each verification recomputes chains and hashes: the desk's buttons and the verify API
    draw on one per-user budget (THROTTLE_AUDIT_VERIFY); over it, 429 and nothing computed."""
    from rest_framework.throttling import SimpleRateThrottle

    from audit import views

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"audit_verify": "3/hour"})
    computed = []
    real = views.chain_verify
    monkeypatch.setattr(views, "chain_verify", lambda: computed.append(1) or real())
    client = client_for(auditor)
    assert client.post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true").status_code == 200
    assert client.post("/desk/verify/", HTTP_HX_REQUEST="true").status_code == 200
    assert client.post(f"/api/reports/{closed.pk}/verify/").status_code == 200
    page = client.post("/desk/verify/")
    assert page.status_code == 429 and int(page["Retry-After"]) > 0
    assert "Too many verifications" in page.content.decode() and "<html" in page.content.decode()
    fragment = client.post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 429 and "<html" not in fragment.content.decode()
    assert client.post(f"/api/reports/{closed.pk}/verify/").status_code == 429
    assert computed == [1]  # the refused trail verification computed nothing
    # another auditor has his own budget
    other = UserFactory(username="auditor2", roles=["auditor"])
    assert client_for(other).post("/desk/verify/", HTTP_HX_REQUEST="true").status_code == 200


def test_the_desks_verify_with_redis_down_is_a_503_not_a_500(client_for, closed, auditor, settings):
    """The verify budget's counts are in the cache: out of reach, no verification runs
    uncounted and the page says the service is not answering (as the API's 503)."""
    from django.core.cache import caches
    from rest_framework.throttling import SimpleRateThrottle

    client = client_for(auditor)
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    original = SimpleRateThrottle.cache
    SimpleRateThrottle.cache = caches["default"]  # (DRF binds its cache at import)
    try:
        page = client.post("/desk/verify/")
        fragment = client.post(f"/desk/reports/{closed.pk}/verify/", HTTP_HX_REQUEST="true")
    finally:
        SimpleRateThrottle.cache = original
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert "not answering" in page.content.decode()
    assert fragment.status_code == 503


# --------------------------------------------------------------------------- versions


def _card(html: str, report_id: int) -> str:
    """The article of one report's card in a page."""
    match = re.search(rf'<article class="report-card card" id="report-{report_id}".*?</article>', html, re.S)
    assert match, report_id
    return match.group(0)


def test_a_superseded_version_says_so_and_links_to_the_latest(
    client_for, closed, direzione, auditor, make_user, django_capture_on_commit_callbacks
):
    from audit.reports import registers

    day = closed.gaming_day
    before = {f.format: f.sha256 for f in closed.files.all()}
    html = client_for(auditor).get(f"/desk/days/{day.pk}/").content.decode()
    assert "Current version: the one in force." in _card(html, closed.pk) and "Superseded" not in html
    # The signed control register asks for version 2, which supersedes version 1.
    registers.cagnotte_count_record(gaming_day=day, table=day.sessions.get().table, by=direzione, witness=auditor,
                                    counted=0)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=make_user("direzione_two", Role.DIREZIONE))
    v2 = DayReport.objects.get(gaming_day=day, version=2)
    assert v2.status == "done", v2.error
    link = f'href="/desk/days/{day.pk}/#report-{v2.pk}">Superseded by version 2</a>'
    html = client_for(auditor).get(f"/desk/days/{day.pk}/").content.decode()
    assert link in _card(html, closed.pk) and "Current version" not in _card(html, closed.pk)
    assert "Current version: the one in force." in _card(html, v2.pk) and "Superseded" not in _card(html, v2.pk)
    # The report's own page (the card) says it too.
    assert link in client_for(auditor).get(f"/desk/reports/{closed.pk}/").content.decode()
    # The desk's list of days: v1 superseded by v2, linked; v2 current.
    html = client_for(auditor).get("/desk/").content.decode()
    assert f'href="/desk/days/{day.pk}/#report-{v2.pk}">superseded by v2</a>' in html
    assert '<span class="version-state current">current</span>' in html
    # The poll that finds version 2 built swaps version 1's card too (out of band); a plain
    # read of the card carries nothing else.
    polled = client_for(auditor).get(f"/desk/reports/{v2.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-swap-oob="true"' in _card(polled, closed.pk) and link in _card(polled, closed.pk)
    assert "hx-swap-oob" not in _card(polled, v2.pk)
    assert f'id="report-{closed.pk}"' not in client_for(auditor).get(f"/desk/reports/{v2.pk}/").content.decode()
    # Version 1's files are the record of what was produced then: not rewritten, still verified.
    assert {f.format: f.sha256 for f in closed.files.all()} == before
    for f in closed.files.all():
        assert hashlib.sha256((Path(settings.MEDIA_ROOT) / f.path).read_bytes()).hexdigest() == f.sha256
    html = client_for(auditor).get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "Sostituita dalla versione 2" in html and "Versione corrente" in html


def test_a_version_from_a_corrected_register_says_so_with_its_reason(
    client_for, closed, direzione, auditor, make_user, django_capture_on_commit_callbacks
):
    """Walk of the end of day: version 3, built once the register's correction was signed,
    was labelled "with the signed control register", as version 2 is. It says the register
    was corrected, and why (the correction's reason: what tells two corrections apart)."""
    from audit.reports import registers

    day = closed.gaming_day
    second = make_user("direzione_two", Role.DIREZIONE)
    count = registers.cagnotte_count_record(gaming_day=day, table=day.sessions.get().table, by=direzione,
                                            witness=auditor, counted=0)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=second)
    registers.cagnotte_count_correct(count=count, by=direzione, witness=auditor, counted=1_00, note="recount")
    fixed = registers.control_register_correct(register=reg, by=direzione, reason="box recounted <b>")
    registers.control_register_sign(register=fixed, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=fixed, by=second)
    v2, v3 = (DayReport.objects.get(gaming_day=day, version=n) for n in (2, 3))
    assert v3.status == "done" and v3.control_register_id == fixed.pk, v3.error
    html = client_for(auditor).get(f"/desk/days/{day.pk}/").content.decode()
    label = "with the control register corrected (box recounted &lt;b&gt;) and signed"
    assert label in _card(html, v3.pk) and "with the signed control register" not in _card(html, v3.pk)
    assert "with the signed control register" in _card(html, v2.pk) and "corrected (" not in _card(html, v2.pk)
    assert "at the close" in _card(html, closed.pk)
    # The card's own answer (its poll) says it too, and in Italian.
    assert label in client_for(auditor).get(f"/desk/reports/{v3.pk}/").content.decode()
    italian = client_for(auditor).get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "con il registro di controllo corretto (box recounted &lt;b&gt;) e firmato" in _card(italian, v3.pk)


def test_the_desk_s_queries_do_not_grow_with_the_versions(client_for, closed, auditor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    client = client_for(auditor)
    urls = ["/desk/", f"/desk/days/{closed.gaming_day_id}/", f"/desk/reports/{closed.pk}/"]

    def queries() -> list[int]:
        counts = []
        for url in urls:
            client.get(url)  # warm: the session and the user's roles
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            counts.append(len(captured))
        return counts

    one = queries()
    for number in (2, 3, 4):  # later versions as their builds leave them
        DayReport.objects.create(gaming_day_id=closed.gaming_day_id, version=number, status="done",
                                 requested_at=timezone.now(), built_at=timezone.now(), summary={"rows": 1})  # fmt: skip
    html = client.get(f"/desk/days/{closed.gaming_day_id}/").content.decode()
    assert html.count("Superseded by version 4") == 3 and html.count("Current version") == 1
    assert queries() == one


def test_the_desk_pages_through_a_casino_s_years_in_the_same_queries(client_for, closed, auditor):
    """A casino open every day has hundreds of gaming days: the desk listed the newest 200 and
    no more, so an older day (and its report) could not be reached from it. It lists them a
    page at a time, newest first, each page in the same queries however many days there are."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from audit.views import DESK_DAYS

    client = client_for(auditor)
    client.get("/desk/")  # warm: the session and the user's roles

    def page(n: int) -> tuple[list[str], int, str]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/desk/?page={n}")
        assert response.status_code == 200
        html = response.content.decode()
        return re.findall(r'href="/desk/days/(\d+)/"', html), len(captured), html

    _, alone, _ = page(1)
    day = closed.gaming_day
    first = day.date - dt.timedelta(days=2 * DESK_DAYS + 20)
    GamingDay.objects.bulk_create(
        GamingDay(casino=day.casino, date=first + dt.timedelta(days=i), opened_at=timezone.now(),
                  opened_by=day.opened_by, closed_at=timezone.now(), closed_by=day.opened_by)
        for i in range(2 * DESK_DAYS + 20)
    )  # fmt: skip
    newest_first = [str(pk) for pk in GamingDay.objects.order_by("-date").values_list("pk", flat=True)]
    listed, counts = [], []
    for n in (1, 2, 3):
        days, queries, html = page(n)
        listed += days
        counts.append(queries)
        assert (f'href="?page={n + 1}"' in html) == (n < 3), n  # "Older days" up to the last page
    assert listed == newest_first and len(listed) == 2 * DESK_DAYS + 21
    assert counts == [alone] * 3, (alone, counts)
    assert client.get("/desk/?page=4").status_code == 404
    for bad in ("0", "-1", "x", "\uff11", "2.0"):  # a fullwidth 1 too
        assert client.get(f"/desk/?page={bad}").status_code == 404, bad


def test_the_desk_pages_are_never_taken_from_the_browser_cache(client_for, closed, auditor):
    """A report being built, a count entered, a register signed: the back button must fetch
    the desk again, not show what was there before."""
    client = client_for(auditor)
    for url in ["/desk/", f"/desk/days/{closed.gaming_day_id}/"]:
        response = client.get(url)
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"], url


def test_the_register_refused_names_the_tables_whose_cagnotte_is_not_counted(
    client_for, make_game, direzione, auditor
):
    """Walk of the end of day: writing the control register with a table's cagnotte not
    counted said "Count the cagnotte of every table first.", leaving the Direzione to look
    for the table. It names them, from the refusal's details, in the page's language; the
    API's answer keeps its code and details."""
    from audit.reports import registers

    first, second = make_game(), make_game()
    day = first.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=first.commissario, open_sessions="close")
    numbers = first.session.table.number, second.session.table.number
    client = client_for(direzione)

    def refused(**headers) -> str:
        response = client.post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())}, **headers)
        assert response.status_code == 409
        return re.search(r'class="outcome err"[^>]*>([^<]*)<', response.content.decode()).group(1)

    assert refused() == f"Count the cagnotte of tables {numbers[0]}, {numbers[1]} first."
    registers.cagnotte_count_record(gaming_day=day, table=first.session.table, by=direzione, witness=auditor,
                                    counted=0)  # fmt: skip
    assert refused() == f"Count the cagnotte of table {numbers[1]} first."
    assert refused(HTTP_ACCEPT_LANGUAGE="it") == f"Contare prima la cagnotte del tavolo {numbers[1]}."
    assert not ControlRegister.objects.exists()
    answer = client_for(direzione).post(f"/api/gaming-days/{day.pk}/control-register/")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "cagnotte_not_counted"
    assert answer.json()["error"]["details"] == {"tables": [numbers[1]]}


def test_the_register_gives_its_total_in_words_in_both_languages(client_for, closed, direzione, auditor):
    """The control register's total written out in words (art. 72), as the report gives it:
    Italian and English, whatever the page's language (an English page showed the Italian
    words alone)."""
    day = closed.gaming_day
    table = day.sessions.get().table
    client = client_for(direzione)
    data = {"table": table.pk, "counted": "260", "tips": "12", "witness": auditor.pk, "note": "",
            "idempotency_key": str(uuid.uuid4())}  # fmt: skip
    assert client.post(f"/desk/days/{day.pk}/cagnotte/", data).status_code == 200
    assert client.post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())}).status_code == 200
    reg = ControlRegister.objects.get()
    assert reg.total == 260_00
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert escape(reg.total_words_it) in html
    assert escape(reg.total_words_en) in html


def _outcome(response) -> str:
    return re.search(r'id="desk-result"[^>]*>(.*?)</div>', response.content.decode(), re.S).group(1)


def test_the_books_messages_write_amounts_the_page_s_way(client_for, closed, direzione, auditor):
    """QA (the Direzione's evening in Italian): "Cagnotte del tavolo 1 contata: € 1500.50." was
    written with Python's "%.2f", a point and no grouping, on a page that prints every other
    amount "€ 1 500,50". The count, its correction, the register and its correction say their
    amounts as the page does (euros_exact), in both languages."""
    from django.utils import translation

    from tables.templatetags.chemin_ui import euros_exact

    day = closed.gaming_day
    table = day.sessions.get().table
    client = client_for(direzione)
    with translation.override("it"):
        it_amount = euros_exact(1500_50)
    assert it_amount.endswith("500,50")  # grouped, with the decimal comma
    counted = client.post(f"/desk/days/{day.pk}/cagnotte/", {
        "table": table.pk, "counted": "1500,50", "tips": "1.500,50", "witness": auditor.pk,
        "idempotency_key": str(uuid.uuid4()),
    }, HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    assert counted.status_code == 200, counted.content.decode()
    assert _outcome(counted) == f"Cagnotte del tavolo {table.number} contata: €\xa0{it_amount}; mance €\xa0{it_amount}."
    count = CagnotteCount.objects.get()
    corrected = client.post(f"/desk/counts/{count.pk}/correct/", {
        "counted": "1.500,50", "witness": auditor.pk, "note": "ricontata", "idempotency_key": str(uuid.uuid4()),
    }, HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    assert corrected.status_code == 200, corrected.content.decode()
    assert f"€\xa0{it_amount}." in _outcome(corrected) and "1500.50" not in _outcome(corrected)
    written = client.post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())},
                          HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    assert written.status_code == 200, written.content.decode()
    assert f"€\xa0{it_amount}." in _outcome(written) and "1500.50" not in _outcome(written)
    count = CagnotteCount.objects.get(corrects=count)
    with translation.override("en"):
        en_amount, en_tips = euros_exact(1500_00), euros_exact(1500_50)
    english = client.post(f"/desk/counts/{count.pk}/correct/", {
        "counted": "1,500", "witness": auditor.pk, "note": "recounted", "idempotency_key": str(uuid.uuid4()),
    })  # fmt: skip
    assert english.status_code == 200, english.content.decode()
    assert _outcome(english) == f"Count of table {table.number} corrected: €\xa0{en_amount}; tips €\xa0{en_tips}."
    assert en_amount.endswith("500.00") and en_amount != "1500.00"


def test_no_signature_is_offered_over_a_register_a_count_has_left_behind(client_for, closed, direzione, auditor):
    """QA: a count corrected after the register was written (unsigned), the desk said "bring it
    up to date before signing" and still offered "Sign first", enabled, which the service
    refuses (409 register_stale). The button is disabled until the register is brought up to
    date, and the hint "You signed first" is not said to someone who did not."""
    from audit.reports import registers

    day = closed.gaming_day
    table = day.sessions.get().table
    count = registers.cagnotte_count_record(gaming_day=day, table=table, by=direzione, witness=auditor, counted=0)
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.cagnotte_count_correct(count=count, by=direzione, witness=auditor, counted=1_00, note="recount")
    client = client_for(direzione)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "bring it up to date before signing" in html
    sign = re.search(rf'action="/desk/registers/{reg.pk}/sign/".*?</form>', html, re.S).group(0)
    assert re.search(r"<button[^>]*\sdisabled", sign), sign
    assert "You signed first" not in html
    # brought up to date, it is offered again
    assert client.post(f"/desk/days/{day.pk}/register/", {"idempotency_key": str(uuid.uuid4())}).status_code == 200
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    sign = re.search(rf'action="/desk/registers/{reg.pk}/sign/".*?</form>', html, re.S).group(0)
    assert not re.search(r"<button[^>]*\sdisabled", sign), sign
    assert client.post(f"/desk/registers/{reg.pk}/sign/", {"idempotency_key": str(uuid.uuid4())}).status_code == 200
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert "You signed first" in html


def test_a_witness_whose_roles_are_none_in_force_is_not_offered(client_for, closed, direzione, auditor, make_user):
    """QA: an auditor also written into the Capo Partita group past the guard (floor.W001) acts
    with none of his roles, and the count refuses him as its witness (witness_not_staff); the
    desk still offered him in the witness list. It offers only those the count takes."""
    legacy = make_user("legacy_auditor", Role.AUDITOR)
    from django.contrib.auth.models import Group

    type(legacy).groups.through.objects.create(  # (no signal: past the guard)
        user=legacy, group=Group.objects.get(name=Role.CAPO_PARTITA)
    )
    day = closed.gaming_day
    html = client_for(direzione).get(f"/desk/days/{day.pk}/").content.decode()
    witnesses = re.search(r'name="witness"[^>]*>(.*?)</select>', html, re.S).group(1)
    offered = {int(pk) for pk in re.findall(r'value="(\d+)"', witnesses)}
    assert auditor.pk in offered and legacy.pk not in offered


def test_the_desk_counts_the_tips_with_the_cagnotte_and_shows_them(client_for, closed, direzione, auditor):
    """The tips box (the mance, RULES.md §6) is counted with the cagnotte's: the count's form
    asks for both (a count without the tips is refused, nothing written), the page shows each
    table's tips and the day's, apart from the cagnotte; the correction's form may correct the
    tips alone, and the register written then carries them apart from its total."""
    from audit.reports import registers

    day = closed.gaming_day
    table = day.sessions.get().table
    client = client_for(direzione)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert f'id="tips-{table.pk}" name="tips" type="text" inputmode="decimal" value="" required>' in html
    assert "Tips (staff's)" in html
    events = AuditEvent.objects.count()
    data = {"table": table.pk, "counted": "0", "witness": auditor.pk, "note": "", "idempotency_key": str(uuid.uuid4())}
    refused = client.post(f"/desk/days/{day.pk}/cagnotte/", data)  # no tips
    assert refused.status_code == 400 and not CagnotteCount.objects.exists()
    for tips in ("-1", "1e3", ""):
        refused = client.post(f"/desk/days/{day.pk}/cagnotte/", {**data, "tips": tips, "idempotency_key": str(uuid.uuid4())})
        assert refused.status_code == 400 and not CagnotteCount.objects.exists(), tips
        if tips == "-1":
            assert "The tips counted are an amount of at least 0 euro." in refused.content.decode()
    assert AuditEvent.objects.count() == events
    response = client.post(f"/desk/days/{day.pk}/cagnotte/", {**data, "tips": "12.50", "idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 200, response.content.decode()
    assert "Cagnotte of table 1 counted: €\xa00.00; tips €\xa012.50." in response.content.decode()
    count = CagnotteCount.objects.get()
    assert (count.counted, count.tips) == (0, 12_50)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert re.search(rf'data-tips="{table.number}">€\xa012.50<', html)
    assert re.search(r'data-tips="day">€\xa012.50<', html)
    # The tips alone corrected: the cagnotte's figure left blank stands.
    response = client.post(f"/desk/counts/{count.pk}/correct/", {
        "counted": "", "tips": "13", "witness": auditor.pk, "note": "tips box recounted",
        "idempotency_key": str(uuid.uuid4())})  # fmt: skip
    assert response.status_code == 200, response.content.decode()
    new = CagnotteCount.objects.get(corrects=count)
    assert (new.counted, new.tips) == (0, 13_00)
    nothing = client.post(f"/desk/counts/{new.pk}/correct/", {
        "witness": auditor.pk, "note": "again", "idempotency_key": str(uuid.uuid4())})  # fmt: skip
    assert nothing.status_code == 400 and CagnotteCount.objects.count() == 2
    assert "Give the cagnotte counted again, the tips counted again, or both." in nothing.content.decode()
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    assert (reg.total, reg.tips_total) == (0, 13_00)
    html = client.get(f"/desk/days/{day.pk}/").content.decode()
    assert re.search(r'data-tips="day">€\xa013.00<', html) and re.search(r'data-register="tips">€\xa013.00<', html)
    assert "<dt>total</dt><dd>€\xa00.00</dd>" in html  # the register's total: the cagnotte only
    # In Italian: the mance.
    html = client.get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "Mance del giorno" in html and "Mance (del personale)" in html


def test_a_count_entered_before_the_tips_says_they_were_not_counted(client_for, closed, direzione, auditor):
    from audit.reports import registers

    day = closed.gaming_day
    table = day.sessions.get().table
    registers.cagnotte_count_record(gaming_day=day, table=table, by=direzione, witness=auditor, counted=0)
    html = client_for(auditor).get(f"/desk/days/{day.pk}/").content.decode()
    assert re.search(rf'data-tips="{table.number}"><span class="muted">not counted</span>', html)
    assert re.search(r'data-tips="day"><span class="muted">not counted</span>', html)
    assert f"no tips recorded at table {table.number}" in html


def test_the_desk_says_in_which_language_each_report_version_is_written(client_for, closed, auditor):
    """Each version keeps the language it was requested in (REPORT_LANGUAGE then): the list of
    days, the day's cards and the report's own card say it in words, in the reader's language."""
    from django.utils import timezone

    from audit.models import REPORT_LANGUAGE_NAMES

    # Every language a report may be written in has its words.
    assert set(REPORT_LANGUAGE_NAMES) == {code for code, _name in settings.LANGUAGES}
    day = closed.gaming_day
    assert closed.language == "en"
    italian = DayReport.objects.create(gaming_day=day, version=2, status="done", language="it",
                                       requested_at=timezone.now(), built_at=timezone.now(), summary={"rows": 1})  # fmt: skip
    client = client_for(auditor)
    for ui, english, italian_words, label in (("en", "English", "Italian", "Language of the report"),
                                              ("it", "Inglese", "Italiano", "Lingua del rapporto")):  # fmt: skip
        html = client.get("/desk/", HTTP_ACCEPT_LANGUAGE=ui).content.decode()
        assert f'<span class="report-language" data-language="en">({english})</span>' in html, ui
        assert f'<span class="report-language" data-language="it">({italian_words})</span>' in html, ui
        html = client.get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE=ui).content.decode()
        for report, words in ((closed, english), (italian, italian_words)):
            said = f'<span data-language="{report.language}">{words}</span>'
            assert f'<span class="muted">{label}</span> {said}' in _card(html, report.pk), (ui, report)
            alone = client.get(f"/desk/reports/{report.pk}/", HTTP_ACCEPT_LANGUAGE=ui).content.decode()
            assert said in _card(alone, report.pk), (ui, report)
