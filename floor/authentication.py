"""API token authentication that reads the user's roles with the token: one query per request.

Tokens are stored as the SHA-256 digest of their key (floor.models.ApiToken): the key is
given once, at login, and the request's key is hashed to find its row.

DRF's TokenAuthentication reads the token with its user; the first permission check then
reads the user's roles (floor.roles.user_roles), a second round trip on every API request.
Here one EXISTS per role rides in the token's query (compiled once per connection:
config.prepared) and the roles are cached on the user as user_roles caches them, so
permissions cost no query. Same answers and errors as DRF's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import Group
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from config.prepared import Prepared
from floor.mfa import mfa_required
from floor.models import ApiToken
from floor.roles import ALL_ROLES, cache_roles


def _role_flag(role: str) -> str:
    return f"chemin_role_{role}"


def _token_with_roles(digest: str):
    flags = {
        _role_flag(role): Exists(Group.objects.filter(user=OuterRef("user_id"), name=role))
        for role in ALL_ROLES
    }
    return ApiToken.objects.select_related("user").annotate(**flags).filter(digest=digest)


TOKEN = Prepared(_token_with_roles, args=(str,))


def token_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def token_expired(token: ApiToken) -> bool:
    return token.created < timezone.now() - dt.timedelta(hours=settings.API_TOKEN_HOURS)


def issue_token(user, *, mfa_verified: bool = False) -> tuple[str, ApiToken]:
    """A new token for one login (one device): (its key, shown once; the stored row).

    The user's expired tokens are deleted on the way: they could no longer be used."""
    ApiToken.objects.filter(
        user=user, created__lt=timezone.now() - dt.timedelta(hours=settings.API_TOKEN_HOURS)
    ).delete()
    key = secrets.token_hex(20)  # 160 bits, 40 characters as DRF's keys
    return key, ApiToken.objects.create(user=user, digest=token_digest(key), mfa_verified=mfa_verified)


class TokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>`, the user's roles read in the same query. A token lasts
    settings.API_TOKEN_HOURS from its issue (a shift): a tablet left logged in overnight, or a
    token copied off it, stops working; the Capo Partita logs in again."""

    model = ApiToken

    def authenticate_credentials(self, key: str):
        if len(key) > 200:  # no key is that long: not worth hashing
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        try:
            token = TOKEN.get(token_digest(key))
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if token_expired(token):
            raise exceptions.AuthenticationFailed(_("Token expired: log in again."))
        cache_roles(token.user, (role for role in ALL_ROLES if getattr(token, _role_flag(role))))
        if not token.mfa_verified and mfa_required(token.user):
            # Ended, not suspended: giving the role back must not revive a password-only token.
            from django.db import transaction

            from floor.security import security_event

            with transaction.atomic():
                if ApiToken.objects.filter(pk=token.pk).delete()[0]:
                    security_event("auth.token_revoked", actor=token.user, token=token.pk,
                                   reason="second_factor_required")  # fmt: skip
            raise exceptions.AuthenticationFailed(_("This account now logs in with a one-time code: log in again."))
        return token.user, token
