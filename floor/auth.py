"""Failed-login throttling, shared by the token API (tablets) and the browser login page.

Failures are counted in the cache per username and per client address, in a fixed window
of settings.LOGIN_FAILURE_WINDOW seconds from the first failure. Once either count reaches
settings.LOGIN_MAX_FAILURES, further attempts are refused with 429 before the password is
even checked, so a guesser learns nothing more and spends no hasher time. A success resets
the username's count (not the address's: one good password must not unlock guessing others).

The throttle fails closed: with the cache (Redis) unreachable, a login is refused as
"service unavailable" (503, THROTTLE_UNAVAILABLE below) rather than let through uncounted,
which would give a guesser unlimited attempts for as long as the outage lasts."""

from __future__ import annotations

import hashlib
import unicodedata

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from config.errors import REDIS_UNAVAILABLE, ApplicationError

_PREFIX = "chemin:login-failures"

# What the cache raises when Redis is down. The functions below let it through: the token
# API answers it with config.errors' 503 `service_unavailable`, the login page with its
# 503 page (floor.views.ThrottledLoginView). Either way no password is checked.
THROTTLE_UNAVAILABLE = REDIS_UNAVAILABLE
# Retry-After of the login page's 503: a person tries again by hand, Redis restarts in seconds.
UNAVAILABLE_RETRY_AFTER_SECONDS = 5


class TooManyFailedLogins(ApplicationError):
    status_code = 429

    def __init__(self) -> None:
        super().__init__(
            "too_many_failed_logins",
            "Too many failed logins; try again later.",
            details={"retry_after_seconds": settings.LOGIN_FAILURE_WINDOW},
        )


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or behind settings.TRUSTED_PROXY_HOPS trusted proxies the address the
    nearest of them appended to X-Forwarded-For. The entries left of those are the client's
    to write, so trusting them would let a guesser pick a fresh "address" for every attempt;
    and without the setting, behind a proxy, every user would share the proxy's address."""
    hops = settings.TRUSTED_PROXY_HOPS
    if hops > 0:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if len(forwarded) >= hops and forwarded[-hops]:
            return forwarded[-hops][:64]
    return request.META.get("REMOTE_ADDR") or "unknown"


def _username_key(username: str) -> str:
    # Django's login form reads the username NFKC-normalized: the same form here, so that
    # look-alike spellings (fullwidth letters...) count against the one account.
    return unicodedata.normalize("NFKC", username).strip().casefold()


def _keys(*, username: str, address: str) -> tuple[str, str]:
    # Usernames are hashed so arbitrary input never becomes part of a cache key.
    digest = hashlib.sha256(_username_key(username).encode()).hexdigest()
    return f"{_PREFIX}:user:{digest}", f"{_PREFIX}:addr:{address}"


def login_blocked(*, username: str, address: str) -> bool:
    user_key, address_key = _keys(username=username, address=address)
    counts = cache.get_many([user_key, address_key])
    return (
        counts.get(user_key, 0) >= settings.LOGIN_MAX_FAILURES
        or counts.get(address_key, 0) >= settings.LOGIN_MAX_FAILURES_PER_ADDRESS
    )


def login_failed(*, username: str, address: str) -> None:
    for key in _keys(username=username, address=address):
        # add() starts the window only on the first failure; incr() keeps its expiry.
        cache.add(key, 0, timeout=settings.LOGIN_FAILURE_WINDOW)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW)


def login_succeeded(*, username: str, address: str) -> None:
    user_key, _ = _keys(username=username, address=address)
    cache.delete(user_key)
