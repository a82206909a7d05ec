"""Fixtures shared by the whole suite.

Role fixtures are named as in ARCHITECTURE.md: `commissario`, `capo_partita`, `changeur`,
`auditor`, `direzione`, `outsider` (authenticated, no role). `api_client_for(user)` gives a
DRF client for a user (force-authenticated, or with a real token). The floor fixtures
(`casino`, `site`, `table`, `gaming_day`, `table_session`) are made through the services,
so their audit streams exist as in production.

Nothing here is autouse on the database: the engine tests run without one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from floor import services
from floor.roles import Role
from tests.factories import CasinoFactory, PatronFactory, SiteFactory, UserFactory

_DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


@pytest.fixture(autouse=True)
def _default_language():
    """LocaleMiddleware activates a request's language in the thread and leaves it there: a
    page test in Italian left the next test reading amounts the Italian way ("1.005" became
    1,005 euros in tests/tables/test_views_common.py). Each test starts in the default."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _clear_cache(request):
    """The login throttle lives in the cache: no test may inherit another's failures.
    Only tests that touch Django's data pay for it (the engine tests never do)."""
    if _DB_FIXTURES.intersection(request.fixturenames) or request.node.get_closest_marker("django_db"):
        cache.clear()
    yield


@pytest.fixture
def make_user(db) -> Callable[..., object]:
    """`make_user("name", Role.COMMISSARIO, ...)`: a user with these roles."""

    def make(username: str | None = None, *roles: Role | str, **extra):
        kwargs = {"roles": list(roles), **extra}
        if username:
            kwargs["username"] = username
        return UserFactory(**kwargs)

    return make


@pytest.fixture
def commissario(make_user):
    return make_user("commissario", Role.COMMISSARIO)


@pytest.fixture
def capo_partita(make_user):
    return make_user("capo_partita", Role.CAPO_PARTITA)


@pytest.fixture
def changeur(make_user):
    return make_user("changeur", Role.CHANGEUR)


@pytest.fixture
def auditor(make_user):
    return make_user("auditor", Role.AUDITOR)


@pytest.fixture
def direzione(make_user):
    return make_user("direzione", Role.DIREZIONE)


@pytest.fixture
def outsider(make_user):
    return make_user("outsider")


@pytest.fixture
def api_client_for() -> Callable[..., APIClient]:
    """`api_client_for(user)` force-authenticates; `api_client_for(user, token=True)` sends a
    real `Authorization: Token ...` header; `api_client_for(None)` is anonymous."""

    def client_for(user=None, *, token: bool = False) -> APIClient:
        client = APIClient()
        if user is not None:
            if token:
                from floor.authentication import issue_token

                key, _ = issue_token(user)
                client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
            else:
                client.force_authenticate(user)
        return client

    return client_for


@pytest.fixture
def casino(db):
    return CasinoFactory(name="Casinò di Venezia", code="venezia")


@pytest.fixture
def site(casino):
    return SiteFactory(casino=casino, name="Ca' Vendramin Calergi")


@pytest.fixture
def table(site, direzione):
    return services.table_create(casino=site.casino, site=site, number=1, by=direzione)


@pytest.fixture
def gaming_day(casino, commissario):
    return services.gaming_day_open(casino=casino, by=commissario)


@pytest.fixture
def table_session(table, gaming_day, commissario, capo_partita, changeur):
    """An open session on `table`: the `capo_partita` fixture runs it, minimum 100.00 euro."""
    return services.table_session_open(
        table=table,
        by=commissario,
        capo_partita=capo_partita,
        changeur=changeur,
        shoe_number="S-101",
        minimum=100_00,
    )


@pytest.fixture
def patron(db):
    return PatronFactory()


@pytest.fixture
def seat_patrons(commissario) -> Callable[..., list]:
    """`seat_patrons(session, n)`: n new patrons in seats 1..n, through the service."""

    def seat(session, n: int, *, start: int = 1) -> list:
        return [
            services.seat_assign(session=session, patron=PatronFactory(), seat_number=number, by=commissario)
            for number in range(start, start + n)
        ]

    return seat
