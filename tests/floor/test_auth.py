"""Logging in: tokens for tablets, the browser pages, and the failed-login throttle."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate
from rest_framework.views import APIView

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
    settings.LOGIN_FAILURE_WINDOW = 60
    return settings


def test_token_login_returns_the_token_the_user_and_the_roles(commissario):
    response = login(APIClient(), "commissario", PASSWORD)
    assert response.status_code == 200
    body = response.json()
    assert body["token"] == Token.objects.get(user=commissario).key
    assert body["roles"] == ["commissario"]
    assert body["user"]["username"] == "commissario"
    assert body["user"]["roles"] == ["commissario"]
    # The token works, on its own, for the API.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
    me = client.get("/api/me/")
    assert me.status_code == 200 and me.json()["username"] == "commissario"


def test_a_second_login_returns_the_same_token(capo_partita):
    first = login(APIClient(), "capo_partita", PASSWORD).json()["token"]
    assert login(APIClient(), "capo_partita", PASSWORD).json()["token"] == first


def test_wrong_password_is_a_400_in_the_error_shape(commissario):
    response = login(APIClient(), "commissario", "wrong-password")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_credentials"
    assert not Token.objects.exists()


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
    assert not Token.objects.filter(user=changeur).exists()
    refused = client.get("/api/me/")
    assert refused.status_code in (401, 403)
    assert refused.json()["error"]["code"] == "authentication_failed"


def test_me_shows_the_roles(api_client_for, make_user):
    both = make_user("both", Role.CAPO_PARTITA, Role.CHANGEUR, first_name="Giulia", last_name="Contarini")
    body = api_client_for(both, token=True).get("/api/me/").json()
    assert body == {
        "id": both.pk, "username": "both", "first_name": "Giulia", "last_name": "Contarini",
        "roles": ["capo_partita", "changeur"],
    }


def test_a_token_request_reads_the_user_and_his_roles_in_one_query(api_client_for, make_user):
    both = make_user("both", Role.CAPO_PARTITA, Role.CHANGEUR)
    client = api_client_for(both, token=True)
    client.get("/api/me/")  # the first on this connection compiles the query
    with CaptureQueriesContext(connection) as captured:
        body = client.get("/api/me/").json()
    assert body["roles"] == ["capo_partita", "changeur"]
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
    assert not Token.objects.exists()
    # Per username: another address is refused too.
    assert login(client, "commissario", PASSWORD, address="10.9.9.9").status_code == 429


def test_failures_are_counted_per_address_across_usernames(throttle, commissario, auditor):
    client = APIClient()
    for name in ("a", "b", "c"):
        login(client, name, "guess", address="10.6.6.6")
    assert login(client, "auditor", PASSWORD, address="10.6.6.6").status_code == 429
    assert login(client, "auditor", PASSWORD, address="10.7.7.7").status_code == 200


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


def test_home_of_a_user_without_role(client, outsider):
    client.post("/accounts/login/", {"username": "outsider", "password": PASSWORD})
    home = client.get("/")
    assert home.status_code == 200
    assert b"no role" in home.content and b"/api/docs/" not in home.content


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
