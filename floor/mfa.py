"""The second factor: a time-based one-time code (TOTP, RFC 6238) for the roles that
supervise the floor and its books, checked at every login (the login page, the admin's,
and POST /api/auth/token/) before any session or token exists.

Which roles need it is settings.MFA_ROLES (production: commissario, direzione, auditor and
superusers; the demo and the tests: none unless set). A user enrols in person: a superuser
adds his authenticator in the admin (Authenticators) and shows him its QR code, or the
server's operator runs `manage.py mfa_enrol` (the first superuser); a user
who needs a code and has no authenticator cannot log in until then (a password alone, if
stolen, must never let its thief enrol his own). The codes are django-otp's: a code is
used once, and failures slow the device down (its throttling), on top of the failed-login
throttle that counts a wrong code as a failed login."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_otp import devices_for_user

from .roles import SUPERUSER, user_roles  # SUPERUSER: MFA_ROLES' name for the superusers

_CODE = re.compile(r"\d{6,8}", re.ASCII)


def mfa_required(user: Any) -> bool:
    wanted = set(settings.MFA_ROLES)
    if not wanted:
        return False
    if SUPERUSER in wanted and getattr(user, "is_superuser", False):
        return True
    return bool(wanted & user_roles(user))


def mfa_enrolled(user: Any) -> bool:
    return any(True for _ in devices_for_user(user, confirmed=True))


def verify_code(user: Any, code: str | None) -> bool:
    """True when `code` is the current code of one of the user's confirmed authenticators."""
    text = re.sub(r"\s", "", code or "")
    if not _CODE.fullmatch(text):
        return False
    with transaction.atomic():  # django-otp locks the devices to record the use (no replay)
        return any(device.verify_token(text) for device in devices_for_user(user, for_verify=True))


def locked_until(user: Any) -> Any:
    """When every authenticator of the user is slowed down by django-otp after wrong codes
    (1 s, 2 s, 4 s... after each), the moment the first frees up; else None. A right code
    is refused until then, so the user must be told that rather than "not right"."""
    until = None
    for device in devices_for_user(user, confirmed=True):
        allowed, data = device.verify_is_allowed()
        if allowed:
            return None
        moment = (data or {}).get("locked_until")
        if moment is not None and (until is None or moment < until):
            until = moment
    return until


def second_factor_failed(user: Any, code: str, request: Any = None) -> None:
    """The password was right and the code missing or wrong: on record (floor.security), for
    "someone has this password" is exactly what the trail must show."""
    from .security import security_event

    security_event("auth.second_factor_failed", actor=user, request=request, code=code)


class SecondFactorRefused(Exception):
    def __init__(self, code: str, until: Any = None):
        super().__init__(code)
        self.code = code  # mfa_not_enrolled | mfa_code_required | mfa_code_invalid | mfa_locked
        self.until = until

    @property
    def message(self) -> str:
        if self.code == "mfa_locked":
            return str(MESSAGES["mfa_locked"]) % {"time": timezone.localtime(self.until).strftime("%H:%M:%S")}
        return str(MESSAGES[self.code])


def check_second_factor(user: Any, code: str | None) -> bool:
    """Raise SecondFactorRefused unless the user needs no code or gave a right one; True when
    a code was checked (the session or token is then marked so: see below)."""
    if not mfa_required(user):
        return bool((code or "").strip()) and mfa_enrolled(user) and verify_code(user, code)
    if not mfa_enrolled(user):
        raise SecondFactorRefused("mfa_not_enrolled")
    if not (code or "").strip():
        raise SecondFactorRefused("mfa_code_required")
    until = locked_until(user)
    if until is not None:
        raise SecondFactorRefused("mfa_locked", until)
    if not verify_code(user, code):
        raise SecondFactorRefused("mfa_code_invalid")
    return True


# A login is bound to the factors it was made with: a session (its key) or an API token (its
# mfa_verified) made without a code stops working as soon as its user needs one, when a role
# in MFA_ROLES is granted to him (a changeur promoted Commissario), or when MFA_ROLES
# changes, rather than carrying a password-only login into a supervising role.
SESSION_KEY = "chemin_mfa_verified"
ENDED_KEY = "chemin_session_ended"


class SecondFactorSessionMiddleware:
    """After AuthenticationMiddleware: a browser session whose user needs a second factor it
    was not opened with is ended, and the request goes on as anonymous (a page sends him to
    the login; the API answers 401/403)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if (
            settings.MFA_ROLES
            and user is not None
            and user.is_authenticated
            and not request.session.get(SESSION_KEY)
            and mfa_required(user)
        ):
            from django.contrib.auth import logout

            from .security import security_event

            security_event("auth.session_ended", actor=user, request=request, reason="second_factor_required")
            logout(request)
            request.session[ENDED_KEY] = "second_factor_required"  # the login page says why
        return self.get_response(request)


# --------------------------------------------------------------------------- the login forms

MESSAGES = {
    "mfa_not_enrolled": _(
        "Your role logs in with a one-time code, and no authenticator is enrolled for you yet: "
        "ask the back office to enrol one."
    ),
    "mfa_code_required": _("Your role logs in with a one-time code: enter the code your authenticator shows."),
    "mfa_code_invalid": _("This one-time code is not right, or was used already: enter the current one."),
    "mfa_locked": _(
        "Too many wrong codes: this authenticator takes no code until %(time)s. Wait, or ask the back "
        "office to reset its throttling (admin, Authenticators)."
    ),
}


class _SecondFactorMixin:
    """The login form's optional code field, checked once the password is right. A refusal
    is the form's error (the login view counts it as a failed login)."""

    second_factor_error: str | None = None
    second_factor_verified = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["otp_token"] = forms.CharField(
            label=_("One-time code"),
            help_text=_("Only for the roles that log in with an authenticator."),
            required=False,
            max_length=16,
            strip=True,
            widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
        )

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)  # type: ignore[misc]
        try:
            self.second_factor_verified = check_second_factor(user, self.cleaned_data.get("otp_token"))  # type: ignore[attr-defined]
        except SecondFactorRefused as refused:
            self.second_factor_error = refused.code
            second_factor_failed(user, refused.code, getattr(self, "request", None))
            raise ValidationError(refused.message, code=refused.code) from None


class StaffAuthenticationForm(_SecondFactorMixin, AuthenticationForm):
    pass


class StaffAdminAuthenticationForm(_SecondFactorMixin, AdminAuthenticationForm):
    pass
