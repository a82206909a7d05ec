"""Logging in: tokens for tablets, the browser pages, and the failed-login throttle."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from floor.authentication import token_digest
from floor.models import ApiToken
from floor.permissions import IsAssignedCapoPartita, session_writable_by
from floor.roles import Role
from tests.factories import PASSWORD, SeatFactory, UserFactory

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"


def login(client: APIClient, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(TOKEN, {"username": username, "password": password}, format="json", REMOTE_ADDR=address)


@pytest.fixture
def throttle(settings):
    settings.LOGIN_MAX_FAILURES = 3
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    settings.LOGIN_FAILURE_WINDOW = 60
    return settings


def test_token_login_returns_the_token_the_user_and_the_roles(commissario):
    response = login(APIClient(), "commissario", PASSWORD)
    assert response.status_code == 200
    body = response.json()
    # Shown once: the server keeps only its digest.
    stored = ApiToken.objects.get(user=commissario)
    assert stored.digest == token_digest(body["token"]) and body["token"] not in stored.digest
    assert len(body["token"]) == 40
    assert body["roles"] == ["commissario"]
    assert body["user"]["username"] == "commissario"
    assert body["user"]["roles"] == ["commissario"]
    # The token works, on its own, for the API.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
    me = client.get("/api/me/")
    assert me.status_code == 200 and me.json()["username"] == "commissario"


def test_each_login_has_its_own_token_and_a_logout_revokes_only_its_own(capo_partita):
    first = login(APIClient(), "capo_partita", PASSWORD).json()["token"]
    second = login(APIClient(), "capo_partita", PASSWORD).json()["token"]
    assert second != first and ApiToken.objects.filter(user=capo_partita).count() == 2
    tablet_a, tablet_b = APIClient(), APIClient()
    tablet_a.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    tablet_b.credentials(HTTP_AUTHORIZATION=f"Token {second}")
    assert tablet_a.post("/api/auth/logout/").status_code == 204
    assert tablet_a.get("/api/me/").status_code == 401
    assert tablet_b.get("/api/me/").status_code == 200  # the other tablet stays logged in


def test_a_database_copy_holds_no_usable_token(capo_partita):
    key = login(APIClient(), "capo_partita", PASSWORD).json()["token"]
    digest = ApiToken.objects.get(user=capo_partita).digest
    thief = APIClient()
    thief.credentials(HTTP_AUTHORIZATION=f"Token {digest}")  # what a dump or a backup shows
    assert thief.get("/api/me/").status_code == 401
    thief.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert thief.get("/api/me/").status_code == 200


def test_wrong_password_is_a_400_in_the_error_shape(commissario):
    response = login(APIClient(), "commissario", "wrong-password")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_credentials"
    assert not ApiToken.objects.exists()


def test_missing_fields_are_invalid_input(db):
    response = APIClient().post(TOKEN, {"username": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_input"
    assert set(response.json()["error"]["details"]) == {"password"}


def test_inactive_users_cannot_log_in(make_user):
    make_user("gone", Role.COMMISSARIO, is_active=False)
    assert login(APIClient(), "gone", PASSWORD).json()["error"]["code"] == "invalid_credentials"


def test_logout_deletes_the_token(api_client_for, changeur):
    client = api_client_for(changeur, token=True)
    assert client.get("/api/me/").status_code == 200
    response = client.post("/api/auth/logout/")
    assert response.status_code == 204
    assert not ApiToken.objects.filter(user=changeur).exists()
    refused = client.get("/api/me/")
    assert refused.status_code in (401, 403)
    assert refused.json()["error"]["code"] == "authentication_failed"


def test_me_shows_the_roles(api_client_for, make_user):
    both = make_user("both", Role.COMMISSARIO, Role.DIREZIONE, first_name="Giulia", last_name="Contarini")
    body = api_client_for(both, token=True).get("/api/me/").json()
    assert body == {
        "id": both.pk, "username": "both", "first_name": "Giulia", "last_name": "Contarini",
        "roles": ["commissario", "direzione"],
    }


def test_a_token_request_reads_the_user_and_his_roles_in_one_query(api_client_for, make_user):
    both = make_user("both", Role.COMMISSARIO, Role.DIREZIONE)
    client = api_client_for(both, token=True)
    client.get("/api/me/")  # the first on this connection compiles the query
    with CaptureQueriesContext(connection) as captured:
        body = client.get("/api/me/").json()
    assert body["roles"] == ["commissario", "direzione"]
    assert len(captured) == 1, [q["sql"] for q in captured]
    auditor = make_user("reader", Role.AUDITOR)
    assert api_client_for(auditor, token=True).get("/api/me/").json()["roles"] == ["auditor"]
    nobody = make_user("nobody")  # no role: refused, as before
    assert api_client_for(nobody, token=True).get("/api/me/").status_code == 403


@pytest.mark.parametrize("key", ["0" * 40, "short", "nul\x00key"])
def test_an_unknown_token_is_refused(key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    refused = client.get("/api/me/")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "authentication_failed"


def test_an_inactive_users_token_is_refused(api_client_for, make_user):
    gone = make_user("gone", Role.COMMISSARIO)
    client = api_client_for(gone, token=True)
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    refused = client.get("/api/me/")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "authentication_failed"


def test_failed_logins_are_throttled_even_with_the_right_password(throttle, commissario):
    client = APIClient()
    for _ in range(3):
        assert login(client, "commissario", "guess").status_code == 400
    response = login(client, "commissario", PASSWORD)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "too_many_failed_logins"
    assert response.json()["error"]["details"] == {"retry_after_seconds": 60}
    assert not ApiToken.objects.exists()
    # Per username: another address is refused too.
    assert login(client, "commissario", PASSWORD, address="10.9.9.9").status_code == 429


def test_failures_are_counted_per_address_across_usernames(throttle, commissario, auditor):
    client = APIClient()
    # An address may fail more often than a username (a floor's tablets may share one)...
    for name in ("a", "b", "c", "d", "e"):
        login(client, name, "guess", address="10.6.6.6")
    assert login(client, "auditor", PASSWORD, address="10.6.6.6").status_code == 200
    # ...up to its own limit.
    login(client, "f", "guess", address="10.6.6.6")
    assert login(client, "auditor", PASSWORD, address="10.6.6.6").status_code == 429
    assert login(client, "auditor", PASSWORD, address="10.7.7.7").status_code == 200


def test_look_alike_usernames_count_against_the_one_account(throttle, commissario):
    """Django's form reads the username NFKC-normalized (fullwidth letters as plain ones):
    so does the throttle."""
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in "commissario")
    for name in (fullwidth, "\uff23ommissario", "commissari\uff4f"):
        browser = Client()
        browser.post("/accounts/login/", {"username": name, "password": "guess"}, REMOTE_ADDR=f"10.3.3.{len(name)}")
    browser = Client()
    answer = browser.post("/accounts/login/", {"username": "commissario", "password": PASSWORD}, REMOTE_ADDR="10.4.4.4")
    assert answer.status_code == 429


def test_behind_trusted_proxies_the_address_is_the_one_they_saw(throttle, settings, commissario):
    from django.test import RequestFactory

    from floor.auth import client_address

    make = RequestFactory()
    forwarded = {"REMOTE_ADDR": "10.0.0.254", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.7"}
    assert client_address(make.get("/", **forwarded)) == "10.0.0.254"  # no proxy trusted: the header is ignored
    settings.TRUSTED_PROXY_HOPS = 1
    assert client_address(make.get("/", **forwarded)) == "203.0.113.7"  # not the client-written 6.6.6.6
    assert client_address(make.get("/", REMOTE_ADDR="10.0.0.254")) == "10.0.0.254"


def test_the_admin_login_is_throttled_and_logins_are_on_record(throttle, make_user):
    throttle.SECURITY_EVENTS = True
    from audit.models import AuditEvent

    admin_user = make_user("boss", is_staff=True, is_superuser=True)
    admin_user.set_password(PASSWORD)
    admin_user.save()
    browser = Client()
    for _ in range(3):
        assert browser.post("/admin/login/", {"username": "boss", "password": "guess"}).status_code == 200
    assert browser.post("/admin/login/", {"username": "boss", "password": PASSWORD}).status_code == 429
    actions = list(AuditEvent.objects.filter(stream__name="security").values_list("action", flat=True))
    assert actions.count("auth.login_failed") == 3 and "auth.logged_in" not in actions
    # The API tokens: one per login, and a password change revokes them all.
    cache.clear()  # (the three failures above hold the username's count)
    api = APIClient()
    first = login(api, "boss", PASSWORD, address="10.9.9.9")
    assert first.status_code == 200
    second = login(api, "boss", PASSWORD, address="10.9.9.8").json()["token"]
    admin_user.refresh_from_db()
    admin_user.set_password("another-password-42")
    admin_user.save()
    for key in (first.json()["token"], second):
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert api.get("/api/me/").status_code == 401
    actions = list(AuditEvent.objects.filter(stream__name="security").order_by("seq").values_list("action", flat=True))
    assert actions[-3:] == ["auth.token_issued", "auth.token_issued", "auth.credentials_changed"]
    changed = AuditEvent.objects.filter(stream__name="security", action="auth.credentials_changed").latest("seq")
    assert json.loads(changed.payload_json)["tokens_revoked"] == 2


def test_a_token_expires_after_a_shift(commissario, settings):
    first = login(APIClient(), "commissario", PASSWORD).json()["token"]
    ApiToken.objects.filter(digest=token_digest(first)).update(created=timezone.now() - dt.timedelta(hours=settings.API_TOKEN_HOURS, minutes=1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    refused = client.get("/api/me/")
    assert refused.status_code == 401 and "expired" in refused.json()["error"]["message"]
    second = login(APIClient(), "commissario", PASSWORD).json()["token"]
    # the expired one is deleted at the next login
    assert second != first and not ApiToken.objects.filter(digest=token_digest(first)).exists()


def test_a_success_resets_the_username_count(throttle, commissario):
    client = APIClient()
    # Different addresses, so only the username's count is at stake.
    login(client, "commissario", "guess", address="10.0.0.1")
    login(client, "commissario", "guess", address="10.0.0.2")
    assert login(client, "commissario", PASSWORD, address="10.0.0.3").status_code == 200
    login(client, "commissario", "guess", address="10.0.0.4")
    login(client, "commissario", "guess", address="10.0.0.5")
    # Four failures in all, but only two since the success: not throttled.
    assert login(client, "commissario", PASSWORD, address="10.0.0.6").status_code == 200


def test_the_throttle_ignores_case_and_spaces_of_the_username(throttle, commissario):
    client = APIClient()
    for name in ("Commissario", "COMMISSARIO", " commissario"):
        login(client, name, "guess", address=f"10.1.1.{len(name)}")
    assert login(client, "commissario", PASSWORD, address="10.2.2.2").status_code == 429


# --------------------------------------------------------------------------- browser pages


def test_browser_login_and_logout(client, commissario):
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="username"' in page.content
    response = client.post("/accounts/login/", {"username": "commissario", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    home = client.get("/")
    assert home.status_code == 200
    assert b"Commissario di Gioco" in home.content
    assert b'href="/api/docs/"' in home.content
    assert b'href="/admin/"' not in home.content
    # The session authenticates the API as well.
    assert client.get("/api/me/").json()["roles"] == ["commissario"]
    assert client.get("/accounts/logout/").status_code == 405  # logout is a POST (CSRF-protected)
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_home_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_home_links_the_direzione_to_the_admin(client, make_user):
    make_user("boss", Role.DIREZIONE, is_staff=True)
    client.post("/accounts/login/", {"username": "boss", "password": PASSWORD})
    home = client.get("/")
    assert b"Direzione Giochi" in home.content and b'href="/admin/"' in home.content
    assert client.get("/admin/floor/table/").status_code == 200  # read access from the migration


def test_home_links_the_superuser_to_the_admin(client, make_user):
    """The demo's `admin` holds no floor role (a superuser is not Capo Partita, changeur or
    auditor): his home page must still lead him to the admin, not only say he has no role."""
    make_user("root", is_staff=True, is_superuser=True)
    client.post("/accounts/login/", {"username": "root", "password": PASSWORD})
    home = client.get("/")
    assert home.status_code == 200
    assert b'href="/admin/"' in home.content
    assert b"no role on the floor" not in home.content


def test_home_of_a_user_without_role(client, outsider):
    client.post("/accounts/login/", {"username": "outsider", "password": PASSWORD})
    home = client.get("/")
    assert home.status_code == 200
    assert b"no role" in home.content and b"/api/docs/" not in home.content


def test_home_greets_in_the_page_s_language(client, commissario):
    client.post("/accounts/login/", {"username": "commissario", "password": PASSWORD})
    name = commissario.first_name or "commissario"
    assert f"Hello, {name}" in client.get("/").content.decode()
    assert f"Salve, {name}" in client.get("/", HTTP_ACCEPT_LANGUAGE="it").content.decode()


def test_browser_login_is_throttled(throttle, client, commissario):
    for _ in range(3):
        assert client.post("/accounts/login/", {"username": "commissario", "password": "x"}).status_code == 200
    refused = client.post("/accounts/login/", {"username": "commissario", "password": PASSWORD})
    assert refused.status_code == 429
    assert b"Too many failed logins" in refused.content
    assert "_auth_user_id" not in client.session
    # The API shares the count: the tablet is refused as well.
    assert login(APIClient(), "commissario", PASSWORD, address="10.3.3.3").status_code == 429


def test_browser_success_resets_the_username_count(throttle, client, commissario):
    client.post("/accounts/login/", {"username": "commissario", "password": "x"}, REMOTE_ADDR="10.0.0.1")
    client.post("/accounts/login/", {"username": "commissario", "password": "x"}, REMOTE_ADDR="10.0.0.2")
    ok = client.post("/accounts/login/", {"username": "commissario", "password": PASSWORD}, REMOTE_ADDR="10.0.0.3")
    assert ok.status_code == 302
    client.post("/accounts/logout/")
    client.post("/accounts/login/", {"username": "commissario", "password": "x"}, REMOTE_ADDR="10.0.0.4")
    client.post("/accounts/login/", {"username": "commissario", "password": "x"}, REMOTE_ADDR="10.0.0.5")
    ok = client.post("/accounts/login/", {"username": "commissario", "password": PASSWORD}, REMOTE_ADDR="10.0.0.6")
    assert ok.status_code == 302


# --------------------------------------------------------------------------- the capo partita's own session


class _CoupLikeApi(APIView):
    permission_classes = (IsAssignedCapoPartita,)

    def post(self, request, obj):
        self.check_object_permissions(request, obj)
        return Response({"ok": True})


def test_is_assigned_capo_partita_and_session_writable_by(table_session, capo_partita, commissario):
    other_capo = UserFactory(roles=[Role.CAPO_PARTITA])
    factory = APIRequestFactory()
    view = _CoupLikeApi.as_view()
    seat = SeatFactory(session=table_session)

    def post(user, obj):
        request = factory.post("/x/")
        force_authenticate(request, user=user)
        return view(request, obj=obj).status_code

    assert post(capo_partita, table_session) == 200
    assert post(capo_partita, seat) == 200  # anything that belongs to his session
    assert post(other_capo, table_session) == 403
    assert post(commissario, table_session) == 403  # a Commissario does not record coups

    assert session_writable_by(capo_partita, table_session)
    assert not session_writable_by(other_capo, table_session)
    assert not session_writable_by(AnonymousUser(), table_session)
    table_session.status = "closed"
    assert not session_writable_by(capo_partita, table_session)


def test_role_grants_and_odd_usernames_are_on_record(settings, make_user):
    from django.contrib.auth.models import Group

    from audit.models import AuditEvent
    from audit.selectors import chain_verify

    settings.SECURITY_EVENTS = True
    user = make_user("newcomer")
    group, _ = Group.objects.get_or_create(name=Role.CAPO_PARTITA)
    user.groups.add(group)
    user.groups.add(group)  # he has it already: nothing to record
    user.groups.remove(group)
    assert login(APIClient(), "x\u0007\u001b[31m" + "y" * 130, "guess").status_code == 400
    events = list(AuditEvent.objects.filter(stream__name="security").order_by("seq"))
    assert [(e.action, e.payload.get("change"), e.payload.get("groups")) for e in events][:2] == [
        ("auth.roles_changed", "add", ["capo_partita"]), ("auth.roles_changed", "remove", ["capo_partita"])]
    failed = events[-1]
    assert failed.action == "auth.login_failed" and failed.payload["username"] == "x[31m" + "y" * 130
    assert chain_verify(streams=["security"]).ok


def test_the_migration_moves_clear_tokens_to_digests(make_user):
    """A database from before floor 0007 keeps DRF's tokens in clear: each is moved over as
    its digest (the tablet stays logged in) and the clear keys are deleted."""
    from importlib import import_module

    from django.apps import apps
    from django.db import connection

    migration = import_module("floor.migrations.0007_api_token")
    user = make_user("old_tablet", Role.CAPO_PARTITA)
    key = "a1" * 20
    with connection.cursor() as cursor:  # (in the test's transaction: rolled back after it)
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id integer, created timestamptz)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, now())", [key, user.pk])
    with connection.schema_editor() as editor:
        migration.tokens_to_digests(apps, editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0
    assert ApiToken.objects.get(user=user).digest == token_digest(key)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/me/").json()["username"] == "old_tablet"


def test_a_password_hash_upgrade_at_login_revokes_nothing(make_user, settings):
    """Django re-hashes a password stored with weaker settings when its user logs in: the
    same password, so his other tablets' tokens stay valid and no change is recorded."""
    from django.contrib.auth.hashers import make_password

    from audit.models import AuditEvent
    from floor.authentication import issue_token

    settings.SECURITY_EVENTS = True
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher", "django.contrib.auth.hashers.MD5PasswordHasher",
    ]  # fmt: skip
    user = make_user("rehashed", Role.CAPO_PARTITA)
    other_tablet, _ = issue_token(user)
    type(user).objects.filter(pk=user.pk).update(password=make_password(PASSWORD, hasher="md5"))  # an old hash
    assert login(APIClient(), "rehashed", PASSWORD).status_code == 200  # the login re-hashes it
    user.refresh_from_db()
    assert user.password.startswith("pbkdf2_")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {other_tablet}")
    assert client.get("/api/me/").status_code == 200
    assert not AuditEvent.objects.filter(stream__name="security", action="auth.credentials_changed").exists()


def test_a_password_made_unusable_in_code_revokes_the_tokens(make_user, settings):
    from floor.authentication import issue_token

    user = make_user("locked_out", Role.CAPO_PARTITA)
    key, _ = issue_token(user)
    user.set_unusable_password()
    user.save(update_fields=["password"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/me/").status_code == 401


def test_the_api_docs_send_a_browser_without_a_session_to_the_login(client):
    response = client.get("/api/docs/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/api/docs/"
