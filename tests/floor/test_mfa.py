"""The second factor (floor/mfa.py): the roles in MFA_ROLES log in with their
authenticator's one-time code besides the password, on the login page, the admin's and the
token API; a wrong code is a failed login; a code is used once; enrolment is on record."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest
from django.test import Client
from django.utils import timezone
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.test import APIClient

from audit.models import AuditEvent
from floor.mfa import SecondFactorRefused
from floor.models import ApiToken
from floor.roles import Role
from tests.factories import PASSWORD
from tests.pages.repeated_hour import MOMENTS

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"


@pytest.fixture
def mfa(settings):
    settings.MFA_ROLES = ["commissario", "direzione", "auditor", "superuser"]
    settings.SECURITY_EVENTS = True
    return settings


def enrol(user) -> TOTPDevice:
    return TOTPDevice.objects.create(user=user, name="phone", confirmed=True)


def code(device: TOTPDevice, *, later: int = 0) -> str:
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() + later
    return f"{totp.token():0{device.digits}d}"


def api_login(username: str, otp: str | None = None, address: str = "10.0.0.1"):
    body = {"username": username, "password": PASSWORD, **({"otp": otp} if otp is not None else {})}
    return APIClient().post(TOKEN, body, format="json", REMOTE_ADDR=address)


def error(response) -> str:
    return response.json()["error"]["code"]


def test_the_token_api_asks_the_supervisors_for_their_code(mfa, commissario, capo_partita):
    assert error(api_login("commissario")) == "mfa_not_enrolled"  # no authenticator: no login
    device = enrol(commissario)
    assert error(api_login("commissario")) == "mfa_code_required"
    assert error(api_login("commissario", "000000" if code(device) != "000000" else "111111")) == "mfa_code_invalid"
    assert not ApiToken.objects.exists()
    device.refresh_from_db()
    device.throttle_reset()  # (django-otp slows a device down after a wrong code: 1 s here)
    right = code(device)
    ok = api_login("commissario", right)
    assert ok.status_code == 200 and ok.json()["roles"] == ["commissario"]
    # A code is used once: the same one again (a shoulder-surfer, a replay) is refused.
    assert error(api_login("commissario", right)) == "mfa_code_invalid"
    # Roles outside MFA_ROLES log in as before.
    assert api_login("capo_partita").status_code == 200


def test_a_wrong_code_counts_as_a_failed_login(mfa, commissario, settings):
    settings.LOGIN_MAX_FAILURES = 3
    device = enrol(commissario)
    for _ in range(3):
        device.refresh_from_db()
        device.throttle_reset()  # (django-otp's own slow-down after each wrong code: not what is tested)
        assert error(api_login("commissario", "123456" if code(device) != "123456" else "654321", address="10.1.1.1")) == "mfa_code_invalid"
    device.refresh_from_db()
    device.throttle_reset()
    refused = api_login("commissario", code(device), address="10.1.1.2")
    assert refused.status_code == 429 and error(refused) == "too_many_failed_logins"


def test_the_login_page_asks_for_the_code_and_says_why(mfa, auditor):
    device = enrol(auditor)
    browser = Client()
    page = browser.get("/accounts/login/")
    assert 'autocomplete="one-time-code"' in page.content.decode()
    missing = browser.post("/accounts/login/", {"username": "auditor", "password": PASSWORD})
    assert missing.status_code == 200
    html = missing.content.decode()
    assert "enter the code your authenticator shows" in html and "Wrong username or password" not in html
    wrong = browser.post("/accounts/login/", {"username": "auditor", "password": "nope", "otp_token": code(device)})
    assert "Wrong username or password" in wrong.content.decode()  # the code is asked after the password only
    assert "_auth_user_id" not in browser.session
    ok = browser.post("/accounts/login/", {"username": "auditor", "password": PASSWORD, "otp_token": code(device)})
    assert ok.status_code == 302 and browser.session["_auth_user_id"] == str(auditor.pk)


def test_the_admin_asks_the_superuser_for_his_code(mfa, make_user):
    root = make_user("root", is_superuser=True, is_staff=True)
    root.set_password(PASSWORD)
    root.save()
    browser = Client()
    page = browser.get("/admin/login/")
    assert 'name="otp_token"' in page.content.decode()
    refused = browser.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert "no authenticator is enrolled" in refused.content.decode() and "_auth_user_id" not in browser.session
    device = enrol(root)
    ok = browser.post("/admin/login/", {"username": "root", "password": PASSWORD, "otp_token": code(device)})
    assert ok.status_code == 302 and browser.session["_auth_user_id"] == str(root.pk)
    # The superuser shows a new colleague his authenticator's QR code from the admin.
    config = browser.get(f"/admin/otp_totp/totpdevice/{device.pk}/config/")
    html = config.content.decode()
    assert config.status_code == 200 and "Authenticator of root" in html and "in person" in html
    assert browser.get(f"/admin/otp_totp/totpdevice/{device.pk}/qrcode/")["Content-Type"] == "image/svg+xml"
    assert browser.get("/admin/otp_totp/totpdevice/99999/config/").status_code == 404
    assert browser.get("/admin/otp_totp/totpdevice/99999/qrcode/").status_code == 404
    assert "Authenticators (one-time codes)" in browser.get("/admin/").content.decode()


def test_enrolment_and_removal_are_on_record_but_not_each_use(mfa, commissario):
    device = enrol(commissario)
    assert api_login("commissario", code(device)).status_code == 200
    device.key = TOTPDevice(user=commissario).key  # re-keyed (a new phone)
    device.save()
    device.delete()
    events = AuditEvent.objects.filter(stream__name="security", action__startswith="auth.authenticator")
    actions = [e.action for e in events.order_by("seq")]
    assert actions == ["auth.authenticator_enrolled", "auth.authenticator_changed", "auth.authenticator_removed"]
    assert json.loads(events.order_by("seq")[1].payload_json)["rekeyed"] is True


def test_no_role_needs_a_code_unless_set(commissario, settings):
    assert settings.MFA_ROLES == []
    assert api_login("commissario").status_code == 200


@pytest.mark.parametrize("role", [Role.CAPO_PARTITA, Role.CHANGEUR])
def test_the_table_staff_can_be_asked_too(settings, make_user, role):
    settings.MFA_ROLES = [str(role)]
    user = make_user("staff", role)
    user.set_password(PASSWORD)
    user.save()
    assert error(api_login("staff")) == "mfa_not_enrolled"


def test_a_login_without_a_code_stops_when_its_user_comes_to_need_one(mfa, make_user):
    """A changeur logged in (no code asked) is made Commissario: his token and his browser
    session end, rather than carrying a password-only login into a supervising role."""
    from django.contrib.auth.models import Group

    user = make_user("promoted", Role.CHANGEUR)
    user.set_password(PASSWORD)
    user.save()
    token = api_login("promoted").json()["token"]
    browser = Client()
    assert browser.post("/accounts/login/", {"username": "promoted", "password": PASSWORD}).status_code == 302
    tablet = APIClient()
    tablet.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert tablet.get("/api/me/").status_code == 200 and browser.get("/").status_code == 200

    user.groups.set([Group.objects.get_or_create(name="commissario")[0]])
    refused = tablet.get("/api/me/")
    assert refused.status_code == 401 and "one-time code" in refused.json()["error"]["message"]
    page = browser.get("/floor/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert "_auth_user_id" not in browser.session  # the session was ended

    device = enrol(user)
    again = APIClient()
    again.credentials(HTTP_AUTHORIZATION=f"Token {api_login('promoted', code(device)).json()['token']}")
    assert again.get("/api/me/").json()["roles"] == ["commissario"]


def test_a_refused_second_factor_is_on_record(mfa, commissario):
    device = enrol(commissario)
    api_login("commissario")
    api_login("commissario", "000000" if code(device) != "000000" else "111111")
    browser = Client()
    browser.post("/accounts/login/", {"username": "commissario", "password": PASSWORD})
    events = AuditEvent.objects.filter(stream__name="security", action="auth.second_factor_failed").order_by("seq")
    assert [json.loads(e.payload_json)["code"] for e in events] == [
        "mfa_code_required", "mfa_code_invalid", "mfa_code_required"
    ]
    assert {e.actor_id for e in events} == {commissario.pk}


def test_the_first_superuser_enrols_from_the_server_and_logs_in(mfa, make_user):
    """The admin, where superusers enrol the others, asks the first superuser for a code: he
    enrols from the server (manage.py mfa_enrol), then logs in with the app's code."""
    import base64
    import io
    import re

    from django.core.management import CommandError, call_command

    root = make_user("root", is_superuser=True, is_staff=True)
    root.set_password(PASSWORD)
    root.save()
    out = io.StringIO()
    call_command("mfa_enrol", "root", stdout=out)
    secret = re.search(r"secret by hand: ([A-Z2-7]+)", out.getvalue()).group(1)
    assert "otpauth://totp/Chemin%3Aroot?secret=" in out.getvalue() and "█" in out.getvalue()  # the QR code
    device = TOTPDevice.objects.get(user=root)
    assert base64.b32decode(secret) == device.bin_key
    browser = Client()
    ok = browser.post("/admin/login/", {"username": "root", "password": PASSWORD, "otp_token": code(device)})
    assert ok.status_code == 302 and browser.session["_auth_user_id"] == str(root.pk)
    with pytest.raises(CommandError, match="has an authenticator already"):
        call_command("mfa_enrol", "root", stdout=io.StringIO())
    call_command("mfa_enrol", "root", "--replace", stdout=io.StringIO())
    assert TOTPDevice.objects.filter(user=root).count() == 1 and not TOTPDevice.objects.filter(pk=device.pk).exists()
    actions = list(AuditEvent.objects.filter(stream__name="security", action__startswith="auth.authenticator")
                   .order_by("seq").values_list("action", flat=True))  # fmt: skip
    assert actions == [
        "auth.authenticator_enrolled", "auth.authenticator_enrolled_from_server",
        "auth.authenticator_removed", "auth.authenticator_enrolled", "auth.authenticator_enrolled_from_server",
    ]  # fmt: skip
    with pytest.raises(CommandError, match="No user"):
        call_command("mfa_enrol", "nobody", stdout=io.StringIO())


def test_a_right_code_while_the_authenticator_is_slowed_down_is_told_so(mfa, commissario):
    """django-otp refuses any code for 1 s, 2 s, 4 s... after each wrong one: a right code
    sent then is told to wait (mfa_locked), not that it is wrong, and is no failed login."""
    device = enrol(commissario)
    wrong = "000000" if code(device) != "000000" else "111111"
    assert error(api_login("commissario", wrong)) == "mfa_code_invalid"
    refused = api_login("commissario", code(device))
    assert error(refused) == "mfa_locked" and "takes no code until" in refused.json()["error"]["message"]
    until = datetime.fromisoformat(refused.json()["error"]["details"]["locked_until"])
    # in the casino's zone, as every time in an answer (the message says the same clock time)
    assert until.utcoffset() == timezone.localtime(until).utcoffset()
    assert until.strftime("%H:%M:%S") in refused.json()["error"]["message"]
    browser = Client()
    page = browser.post("/accounts/login/", {"username": "commissario", "password": PASSWORD, "otp_token": code(device)})
    assert "takes no code until" in page.content.decode()
    device.refresh_from_db()
    device.throttle_reset()  # the back office's reset (admin, Authenticators)
    assert api_login("commissario", code(device)).status_code == 200


def test_a_token_ended_by_a_promotion_stays_ended(mfa, make_user):
    from django.contrib.auth.models import Group

    user = make_user("promoted", Role.CHANGEUR)
    user.set_password(PASSWORD)
    user.save()
    token = api_login("promoted").json()["token"]
    tablet = APIClient()
    tablet.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    user.groups.set([Group.objects.get_or_create(name="commissario")[0]])
    assert tablet.get("/api/me/").status_code == 401
    user.groups.set([Group.objects.get_or_create(name="changeur")[0]])  # the role given back
    assert tablet.get("/api/me/").status_code == 401 and not ApiToken.objects.filter(user=user).exists()


def test_the_login_page_says_why_a_session_ended(mfa, make_user):
    from django.contrib.auth.models import Group

    user = make_user("promoted", Role.CHANGEUR)
    user.set_password(PASSWORD)
    user.save()
    browser = Client()
    browser.post("/accounts/login/", {"username": "promoted", "password": PASSWORD})
    user.groups.set([Group.objects.get_or_create(name="direzione")[0]])
    login_page = browser.get("/", follow=True)
    assert "your role now logs in with a one-time code" in login_page.content.decode()
    assert AuditEvent.objects.filter(stream__name="security", action="auth.session_ended").count() == 1
    assert "your role now logs in" not in browser.get("/accounts/login/").content.decode()  # said once


def test_the_admins_changes_name_their_author(mfa, make_user):
    """A role given, an authenticator enrolled, a user made superuser in the admin: the
    security events name the superuser who did it, and his address."""
    from django.contrib.auth.models import Group

    root = make_user("root", is_superuser=True, is_staff=True)
    root.set_password(PASSWORD)
    root.save()
    device = enrol(root)
    browser = Client()
    browser.post("/admin/login/", {"username": "root", "password": PASSWORD, "otp_token": code(device)})
    clerk = make_user("clerk")
    data = {
        "username": "clerk", "first_name": "", "last_name": "", "email": "", "is_active": "on",
        "is_staff": "on", "date_joined_0": "2026-11-30", "date_joined_1": "10:00:00",
        "initial-date_joined_0": "2026-11-30", "initial-date_joined_1": "10:00:00",
        "groups": [Group.objects.get_or_create(name="direzione")[0].pk], "user_permissions": [],
    }  # fmt: skip
    assert browser.post(f"/admin/auth/user/{clerk.pk}/change/", data).status_code == 302
    events = {e.action: e for e in AuditEvent.objects.filter(stream__name="security", actor=root)}
    assert {"auth.roles_changed", "auth.privileges_changed"} <= set(events)
    assert json.loads(events["auth.privileges_changed"].payload_json)["is_staff"] is True
    assert json.loads(events["auth.roles_changed"].payload_json)["address"]


def test_the_admin_checks_an_authenticators_key_without_echoing_it(make_user, commissario):
    """The key is the shared secret: a bad one is refused with what a key is (django-otp's own
    message repeated the typed secret in a Python repr); spaces and capitals are forgiven."""
    root = make_user("root", is_superuser=True, is_staff=True)
    browser = Client()
    browser.force_login(root)
    form = {
        "user": commissario.pk, "name": "phone", "confirmed": "on", "step": 30, "t0": 0, "digits": 6,
        "tolerance": 1, "drift": 0, "throttling_failure_count": 0,
    }  # fmt: skip
    for bad in ("not-a-secret-zz", "abc", "0f" * 15, "0f" * 41, "0f" * 16 + "a"):
        refused = browser.post("/admin/otp_totp/totpdevice/add/", {**form, "key": bad})
        html = refused.content.decode()
        assert refused.status_code == 200, bad
        assert "A key is 32 to 80 hexadecimal characters (0-9, a-f), an even number of them." in html
        assert "is not valid hex-encoded data" not in html and "does not represent" not in html
    assert not TOTPDevice.objects.exists()
    saved = browser.post("/admin/otp_totp/totpdevice/add/", {**form, "key": "0A1B 2C3D " * 5})
    assert saved.status_code == 200 and "Recovery codes of commissario" in saved.content.decode()  # (enrolled)
    assert TOTPDevice.objects.get().key == "0a1b2c3d" * 5


@pytest.mark.parametrize("moment", MOMENTS, ids=["cest", "cet", "after"])
def test_the_lockouts_until_carries_its_offset_in_the_repeated_hour(moment):
    """A lockout ending in the hour the October change repeats said "until 02:30:15", which
    names two moments an hour apart: it says "02:30:15+02:00" (or "+01:00"), as the pages
    print a time of that hour; any other time as the clock reads it."""
    for recovery in (False, True):
        message = SecondFactorRefused("mfa_locked", moment.at, recovery=recovery).message
        assert f"until {moment.second}." in message
