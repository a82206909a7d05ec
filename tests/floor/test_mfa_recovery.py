"""Recovery codes (floor/mfa.py): ten single-use codes issued with each enrolment, for the
day the phone is lost. Each takes the place of the authenticator's code once, on the login
page, the admin's and the token API; a wrong one is a failed login; its use is on record
(without the code); only digests are kept; codes alone are no enrolment."""

from __future__ import annotations

import io
import json
import re
import secrets

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import AuditEvent
from floor.mfa import RecoveryCodesRefused, recovery_codes_issue
from floor.models import ApiToken
from tests.factories import PASSWORD
from tests.floor.test_mfa import api_login, code, enrol, error

pytestmark = pytest.mark.django_db

SHAPE = re.compile(r"[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}")  # Crockford's base32, lower case


@pytest.fixture
def mfa(settings):
    settings.MFA_ROLES = ["commissario", "direzione", "auditor", "superuser"]
    settings.SECURITY_EVENTS = True
    return settings


def printed_codes(output: str) -> list[str]:
    return re.findall(r"^\s+\d+\. (\S+)$", output, re.MULTILINE)


def shown_codes(html: str) -> list[str]:
    return [text for text in re.findall(r"<code>([^<]*)</code>", html) if SHAPE.fullmatch(text)]


def security_events(action: str):
    return AuditEvent.objects.filter(stream__name="security", action=action).order_by("seq")


def superuser(make_user):
    root = make_user("root", is_superuser=True, is_staff=True)
    root.set_password(PASSWORD)
    root.save()
    return root


def test_the_enrolment_prints_ten_codes_once_and_keeps_only_digests(mfa, commissario):
    out = io.StringIO()
    call_command("mfa_enrol", "commissario", stdout=out)
    codes = printed_codes(out.getvalue())
    assert len(codes) == 10 == len(set(codes)) and all(SHAPE.fullmatch(c) for c in codes)
    assert "Shown this once" in out.getvalue()
    kept = set(StaticToken.objects.filter(device__user=commissario).values_list("token", flat=True))
    assert len(kept) == 10
    assert not kept & (set(codes) | {c.replace("-", "") for c in codes})  # no code in clear
    # A code never looks like a TOTP code (6 to 8 digits), whatever its letters.
    assert not any(re.fullmatch(r"\d{6,8}", c.replace("-", "")) for c in codes)


def test_new_codes_void_the_old_ones(mfa, commissario):
    enrol(commissario)
    old = recovery_codes_issue(user=commissario)
    out = io.StringIO()
    call_command("mfa_recovery_codes", "commissario", stdout=out)
    new = printed_codes(out.getvalue())
    assert len(new) == 10 and not set(new) & set(old)
    assert StaticDevice.objects.filter(user=commissario).count() == 1
    assert StaticToken.objects.filter(device__user=commissario).count() == 10
    assert error(api_login("commissario", old[0])) == "mfa_code_invalid"
    StaticDevice.objects.get(user=commissario).throttle_reset()
    assert api_login("commissario", new[0]).status_code == 200
    issued = security_events("auth.recovery_codes_issued")
    assert [json.loads(e.payload_json)["voided"] for e in issued] == [0, 10]
    assert security_events("auth.recovery_codes_removed").count() == 1
    with pytest.raises(CommandError, match="No user"):
        call_command("mfa_recovery_codes", "nobody", stdout=io.StringIO())


def test_the_token_api_takes_a_recovery_code_once(mfa, commissario):
    device = enrol(commissario)
    codes = recovery_codes_issue(user=commissario)
    ok = api_login("commissario", codes[0])
    assert ok.status_code == 200 and ApiToken.objects.get().mfa_verified  # a second factor, as a TOTP code is
    assert ok.json()["recovery_codes_left"] == 9  # his phone is missing: he is told what is left
    # Used once: the same code again is refused, whoever saw it.
    assert error(api_login("commissario", codes[0])) == "mfa_code_invalid"
    StaticDevice.objects.get(user=commissario).throttle_reset()
    # Case, dashes and spaces as typed; "o" for 0 and "l" for 1 forgiven.
    typed = codes[1].upper().replace("-", " ").replace("0", "O").replace("1", "l")
    assert api_login("commissario", typed).status_code == 200
    # The authenticator works as before, and was not slowed down by the refused recovery code.
    with_phone = api_login("commissario", code(device))
    assert with_phone.status_code == 200 and with_phone.json()["recovery_codes_left"] is None
    assert StaticToken.objects.filter(device__user=commissario).count() == 8


def test_the_login_page_takes_a_recovery_code_and_says_so(mfa, auditor):
    device = enrol(auditor)
    codes = recovery_codes_issue(user=auditor)
    browser = Client()
    page = browser.get("/accounts/login/").content.decode()
    assert "one of your recovery codes" in page and 'inputmode="numeric"' not in page  # (a code has letters)
    italian = Client().get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "uno dei codici di recupero" in italian
    ok = browser.post("/accounts/login/", {"username": "auditor", "password": PASSWORD, "otp_token": codes[3]})
    assert ok.status_code == 302 and browser.session["_auth_user_id"] == str(auditor.pk)
    # the phone is missing: he is told what is left and to have it enrolled again, once
    landing = browser.get(ok.url).content.decode()
    assert "You logged in with a recovery code: 9 are left." in landing
    assert "recovery code" not in browser.get(ok.url).content.decode()
    italian = Client(HTTP_ACCEPT_LANGUAGE="it")
    ok = italian.post("/accounts/login/", {"username": "auditor", "password": PASSWORD, "otp_token": codes[4]})
    assert "Accesso con un codice di recupero: ne restano 8." in italian.get(ok.url).content.decode()
    with_phone = Client()
    ok = with_phone.post("/accounts/login/", {"username": "auditor", "password": PASSWORD, "otp_token": code(device)})
    assert ok.status_code == 302 and "recovery code" not in with_phone.get(ok.url).content.decode()
    again = Client().post("/accounts/login/", {"username": "auditor", "password": PASSWORD, "otp_token": codes[3]})
    assert again.status_code == 200 and "or a recovery code not used yet" in again.content.decode()


def test_the_admin_takes_a_recovery_code(mfa, make_user):
    root = superuser(make_user)
    enrol(root)
    codes = recovery_codes_issue(user=root)
    browser = Client()
    page = browser.get("/admin/login/").content.decode()
    assert "one of your recovery codes" in page
    ok = browser.post("/admin/login/", {"username": "root", "password": PASSWORD, "otp_token": codes[9]})
    assert ok.status_code == 302 and browser.session["_auth_user_id"] == str(root.pk)
    admin = browser.get("/admin/")
    assert admin.status_code == 200 and "You logged in with a recovery code: 9 are left." in admin.content.decode()


def test_a_wrong_recovery_code_is_a_failed_login(mfa, commissario, settings):
    settings.LOGIN_MAX_FAILURES = 3
    device = enrol(commissario)
    codes = recovery_codes_issue(user=commissario)
    for wrong in ("abcde-fghjk", "ABCDE FGHJM", "zzzzz-zzzzz"):
        StaticDevice.objects.get(user=commissario).throttle_reset()  # (django-otp's own slow-down: below)
        assert error(api_login("commissario", wrong, address="10.2.2.1")) == "mfa_code_invalid"
    refused = api_login("commissario", codes[0], address="10.2.2.2")
    assert refused.status_code == 429 and error(refused) == "too_many_failed_logins"
    assert security_events("auth.recovery_code_used").count() == 0 and StaticToken.objects.count() == 10
    events = security_events("auth.second_factor_failed")
    assert [json.loads(e.payload_json)["code"] for e in events] == ["mfa_code_invalid"] * 3
    device.refresh_from_db()
    assert device.throttling_failure_count == 0  # the recovery codes slowed down, not the authenticator


def test_recovery_codes_are_slowed_down_after_a_wrong_one(mfa, commissario):
    """django-otp's throttling, on the recovery codes alone: a right code sent in the next
    second is told to wait (mfa_locked, no failed login), and the TOTP code still works."""
    device = enrol(commissario)
    codes = recovery_codes_issue(user=commissario)
    assert error(api_login("commissario", "abcde-fghjk")) == "mfa_code_invalid"
    locked = api_login("commissario", codes[0])
    assert error(locked) == "mfa_locked" and "recovery codes are refused until" in locked.json()["error"]["message"]
    assert api_login("commissario", code(device)).status_code == 200
    StaticDevice.objects.get(user=commissario).throttle_reset()
    assert api_login("commissario", codes[0]).status_code == 200


def test_a_recovery_code_used_is_on_record_without_the_code(mfa, commissario):
    enrol(commissario)
    codes = recovery_codes_issue(user=commissario)
    api_login("commissario", codes[5], address="10.3.3.3")
    (event,) = security_events("auth.recovery_code_used")
    payload = json.loads(event.payload_json)
    assert event.actor_id == commissario.pk and payload["left"] == 9 and payload["address"] == "10.3.3.3"
    issued = security_events("auth.recovery_codes_issued").get()
    for text in (event.payload_json, issued.payload_json):
        for c in codes:
            assert c not in text and c.replace("-", "") not in text
        for token in StaticToken.objects.values_list("token", flat=True):
            assert token not in text
    # The auditor reads it as a login of its own kind, by its user.
    assert security_events("auth.token_issued").get().actor_id == commissario.pk


def test_codes_alone_are_no_enrolment(mfa, commissario):
    """A removed authenticator (a lost or stolen phone) takes its recovery codes with it: the
    password and a slip of paper from the same wallet are no login, and issuing codes for a
    user without an authenticator would enrol him unseen."""
    device = enrol(commissario)
    codes = recovery_codes_issue(user=commissario)
    device.delete()
    assert error(api_login("commissario", codes[0])) == "mfa_not_enrolled"
    with pytest.raises(RecoveryCodesRefused):
        recovery_codes_issue(user=commissario)
    with pytest.raises(CommandError, match="has no authenticator"):
        call_command("mfa_recovery_codes", "commissario", stdout=io.StringIO())
    # Re-enrolled in person: a new set, the old one void.
    call_command("mfa_enrol", "commissario", stdout=io.StringIO())
    assert error(api_login("commissario", codes[0])) == "mfa_code_invalid"


def test_the_admin_shows_the_codes_once_at_the_enrolment_and_issues_new_ones(mfa, make_user, commissario):
    root = superuser(make_user)
    browser = Client()
    browser.force_login(root)
    session = browser.session
    session["chemin_mfa_verified"] = True  # (logged in with his code: the middleware keeps him)
    session.save()
    form = {
        "user": commissario.pk, "name": "phone", "confirmed": "on", "step": 30, "t0": 0, "digits": 6,
        "tolerance": 1, "drift": 0, "throttling_failure_count": 0, "key": "0a1b2c3d" * 5,
    }  # fmt: skip
    added = browser.post("/admin/otp_totp/totpdevice/add/", form)
    html = added.content.decode()
    codes = shown_codes(html)
    assert added.status_code == 200 and len(codes) == 10 and "shown this once" in html
    assert "no-store" in added["Cache-Control"]
    device = TOTPDevice.objects.get(user=commissario)
    assert f"/admin/otp_totp/totpdevice/{device.pk}/config/" in html  # on to the QR code
    shown_again = browser.get(f"/admin/otp_totp/totpdevice/{device.pk}/change/").content.decode()
    listed = browser.get("/admin/otp_static/staticdevice/").content.decode()
    assert "commissario" in listed  # who has how many left, never the codes
    assert not [c for c in codes if c in shown_again or c in listed or c.replace("-", "") in listed]
    assert browser.get("/admin/otp_static/staticdevice/add/").status_code == 403

    renewed = browser.post("/admin/otp_totp/totpdevice/", {"action": "issue_recovery_codes",
                                                           "_selected_action": [device.pk]})  # fmt: skip
    new = shown_codes(renewed.content.decode())
    assert renewed.status_code == 200 and len(new) == 10 and not set(new) & set(codes)
    assert error(api_login("commissario", codes[0])) == "mfa_code_invalid"
    StaticDevice.objects.get(user=commissario).throttle_reset()
    assert api_login("commissario", new[0]).status_code == 200
    assert {e.actor_id for e in security_events("auth.recovery_codes_issued")} == {root.pk}


def test_codes_outlive_a_new_secret_key_kept_as_a_fallback(mfa, commissario, settings):
    enrol(commissario)
    codes = recovery_codes_issue(user=commissario)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = secrets.token_urlsafe(50)  # the operator's new key
    assert api_login("commissario", codes[0]).status_code == 200
    settings.SECRET_KEY_FALLBACKS = []  # the old key dropped: its codes are void
    assert error(api_login("commissario", codes[1])) == "mfa_code_invalid"
