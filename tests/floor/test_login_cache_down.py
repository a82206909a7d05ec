"""The failed-login throttle with its cache (Redis) down: logins are refused with a 503,
never let through uncounted and never a 500 (found by bench/faults.py, redis scenario)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from rest_framework.test import APIClient

from floor.models import ApiToken
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
# A Redis cache on a port nothing listens on: every cache call raises redis' ConnectionError.
REDIS_DOWN = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
}


@pytest.fixture
def redis_down(settings):
    settings.CACHES = REDIS_DOWN
    return settings


def _written(user) -> tuple:
    user.refresh_from_db()
    return Session.objects.count(), ApiToken.objects.count(), user.last_login


@pytest.mark.parametrize("password", [PASSWORD, "a-guess"], ids=["right-password", "wrong-password"])
def test_browser_login_with_the_cache_down_is_a_503_page_and_writes_nothing(
    redis_down, client, commissario, password
):
    before = _written(commissario)
    response = client.post(f"{LOGIN}?next=/desk/", {"username": "commissario", "password": password})
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.templates[0].name == "503.html"
    body = response.content.decode()
    assert "Service temporarily unavailable" in body and "Try again shortly." in body
    assert 'href="/accounts/login/?next=/desk/"' in body  # back to the same login
    assert _written(commissario) == before == (0, 0, None)  # no session, no token, no last_login
    assert settings.SESSION_COOKIE_NAME not in response.cookies


def test_the_503_page_is_in_italian(redis_down, client, commissario):
    client.cookies["chemin_language"] = "it"
    response = client.post(LOGIN, {"username": "commissario", "password": PASSWORD})
    assert response.status_code == 503
    assert "Servizio temporaneamente non disponibile" in response.content.decode()


def test_the_login_page_itself_does_not_need_the_cache(redis_down, client, db):
    page = client.get(LOGIN)
    assert page.status_code == 200 and b'name="username"' in page.content


def test_token_login_with_the_cache_down_is_a_503_in_the_error_shape(redis_down, commissario):
    response = APIClient().post(
        "/api/auth/token/", {"username": "commissario", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 503 and response["Retry-After"]
    assert response.json()["error"]["code"] == "service_unavailable"
    assert not ApiToken.objects.exists()
    assert get_user_model().objects.get(pk=commissario.pk).last_login is None


def test_the_page_counts_again_once_the_cache_is_back(throttle_settings, client, commissario):
    # The same view with a working cache: still throttled (the 503 path is only for an outage).
    for _ in range(3):
        assert client.post(LOGIN, {"username": "commissario", "password": "x"}).status_code == 200
    assert client.post(LOGIN, {"username": "commissario", "password": PASSWORD}).status_code == 429


@pytest.fixture
def throttle_settings(settings):
    settings.LOGIN_MAX_FAILURES = 3
    settings.LOGIN_FAILURE_WINDOW = 60
    return settings
