"""API token authentication that reads the user's roles with the token: one query per request.

DRF's TokenAuthentication reads the token with its user; the first permission check then
reads the user's roles (floor.roles.user_roles), a second round trip on every API request.
Here one EXISTS per role rides in the token's query (compiled once per connection:
config.prepared) and the roles are cached on the user as user_roles caches them, so
permissions cost no query. Same answers and errors as DRF's.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib.auth.models import Group
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from config.prepared import Prepared
from floor.roles import ALL_ROLES, cache_roles


def _role_flag(role: str) -> str:
    return f"chemin_role_{role}"


def _token_with_roles(key: str):
    flags = {
        _role_flag(role): Exists(Group.objects.filter(user=OuterRef("user_id"), name=role))
        for role in ALL_ROLES
    }
    return Token.objects.select_related("user").annotate(**flags).filter(key=key)


TOKEN = Prepared(_token_with_roles, args=(str,))


def token_expired(token: Token) -> bool:
    return token.created < timezone.now() - dt.timedelta(hours=settings.API_TOKEN_HOURS)


def issue_token(user) -> tuple[Token, bool]:
    """The user's token, a new one if he has none or his has expired: (token, new?)."""
    token = Token.objects.filter(user=user).first()
    if token is not None and not token_expired(token):
        return token, False
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user), True


class TokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>`, the user's roles read in the same query. A token lasts
    settings.API_TOKEN_HOURS from its issue (a shift): a tablet left logged in overnight, or a
    token copied off it, stops working; the Capo Partita logs in again."""

    model = Token

    def authenticate_credentials(self, key: str):
        if "\x00" in key:  # no token holds one, and PostgreSQL refuses it in a text
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        try:
            token = TOKEN.get(key)
        except Token.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if token_expired(token):
            raise exceptions.AuthenticationFailed(_("Token expired: log in again."))
        cache_roles(token.user, (role for role in ALL_ROLES if getattr(token, _role_flag(role))))
        return token.user, token
