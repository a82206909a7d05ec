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
throttle that counts a wrong code as a failed login.

For the day the phone is lost, each enrolment also issues ten single-use recovery codes
(`k7q2x-9xvmp`), given to the user on paper, in person, with the QR code; any one of them
takes the place of the authenticator's code once. They are django-otp's static devices
(otp_static), kept as keyed digests (see "recovery codes" below), and they back up an
authenticator rather than stand for one: see mfa_enrolled."""

from __future__ import annotations

import base64
import re
import secrets
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

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
    """A confirmed authenticator (TOTP), enrolled in person. Recovery codes alone do not
    count: they back up an authenticator, they are not one. Were they enough, issuing codes
    (a command, an admin action: no phone, no QR code shown to anyone) would enrol a user
    nobody saw, and removing a lost or stolen phone's authenticator would leave its
    owner's password plus a slip of paper (kept, as often, in the same wallet) still a
    full login. So codes work only while their user has a confirmed authenticator: removing
    it stops them too, and every enrolment issues a new set in place of the old."""
    return TOTPDevice.objects.devices_for_user(user, confirmed=True).exists()


def _code_kind(code: str | None) -> tuple[str | None, str]:
    """("totp", digits), ("recovery", normal form) or (None, ""): which device a code is for.
    The two shapes cannot be mistaken (6-8 digits; 10 letters and digits), so a code is
    checked against its kind's devices only and a wrong one slows down only those."""
    text = re.sub(r"\s", "", code or "")
    if _CODE.fullmatch(text):
        return "totp", text
    normal = _recovery_normal(text)
    return ("recovery", normal) if normal else (None, "")


def verify_code(user: Any, code: str | None) -> bool:
    """True when `code` is the current code of one of the user's confirmed authenticators,
    or one of his recovery codes (then used up, and on record)."""
    kind, text = _code_kind(code)
    if kind == "recovery":
        return _recovery_code_use(user, text)
    if kind != "totp":
        return False
    with transaction.atomic():  # django-otp locks the devices to record the use (no replay)
        devices = TOTPDevice.objects.devices_for_user(user, confirmed=True).select_for_update()
        return any(device.verify_token(text) for device in devices)


def locked_until(user: Any, code: str | None = None) -> Any:
    """When every device the code is for (the authenticators, or the recovery codes) is
    slowed down by django-otp after wrong codes (1 s, 2 s, 4 s... after each), the moment
    the first frees up; else None. A right code is refused until then, so the user must be
    told that rather than "not right"."""
    until = None
    if _code_kind(code)[0] == "recovery":
        devices = StaticDevice.objects.devices_for_user(user, confirmed=True)
    else:
        devices = TOTPDevice.objects.devices_for_user(user, confirmed=True)
    for device in devices:
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
    def __init__(self, code: str, until: Any = None, *, recovery: bool = False):
        super().__init__(code)
        self.code = code  # mfa_not_enrolled | mfa_code_required | mfa_code_invalid | mfa_locked
        self.until = until
        self.recovery = recovery  # (mfa_locked: the recovery codes are slowed down, not the authenticator)

    @property
    def message(self) -> str:
        if self.code == "mfa_locked":
            key = "mfa_locked_recovery" if self.recovery else "mfa_locked"
            # In the hour the October change repeats, with its UTC offset ("02:30:15+02:00"),
            # as every page prints a time of that hour.
            from audit.exports.formatting import repeated_offset

            until = timezone.localtime(self.until)
            return str(MESSAGES[key]) % {"time": until.strftime("%H:%M:%S") + repeated_offset(until, until.tzinfo)}
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
    until = locked_until(user, code)
    if until is not None:
        raise SecondFactorRefused("mfa_locked", until, recovery=_code_kind(code)[0] == "recovery")
    if not verify_code(user, code):
        raise SecondFactorRefused("mfa_code_invalid")
    return True


# --------------------------------------------------------------------------- recovery codes

RECOVERY_CODE_COUNT = 10
# Crockford's base32 in lower case: no i, l or o, which a reader takes for 1, 1 and 0 (and
# are read so when typed), and no u. Ten characters, 50 random bits a code, shown in two
# groups of five; never 6 to 8 digits, so never mistaken for a TOTP code (_CODE).
_RECOVERY_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_RECOVERY_CODE = re.compile(r"[0-9a-hjkmnp-tv-z]{10}", re.ASCII)
_READ_AS = str.maketrans({"o": "0", "i": "1", "l": "1", "-": None})  # (what Crockford forgives)


def _recovery_normal(text: str) -> str | None:
    # Case, dashes and spaces as the user types them; "o" for 0 and "l" for 1 forgiven.
    normal = text.lower().translate(_READ_AS)
    return normal if _RECOVERY_CODE.fullmatch(normal) else None


def _recovery_new() -> str:
    text = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(10))
    return f"{text[:5]}-{text[5:]}"


# How a code is kept. django-otp keeps a static token in clear (StaticToken.token, 16
# characters), but a recovery code is a password for the second factor: a backup or a copy
# of the database must hold no usable one, as it holds no usable API token (floor/models.py
# keeps their SHA-256). Not Django's password hasher: its slowness protects passwords people
# choose, and these are random; and a code must be found among the user's ten, so a salted
# slow hash would cost ten PBKDF2 runs (seconds) for every guess, a lever anyone could pull
# from the login page. Not a plain SHA-256 either: 50 bits a code is too few against a GPU
# that has the table. So a keyed digest: HMAC-SHA256 of the user's id and the code, keyed by
# SECRET_KEY (salted_hmac), its first 16 characters of base64 (96 bits), in django-otp's own
# column, so that its StaticDevice (throttling, last use) and tables serve unchanged. A copy
# of the table without SECRET_KEY is worth nothing, and a digest copied to another user's
# row matches nothing. A new SECRET_KEY voids the codes unless the old one is kept in
# SECRET_KEY_FALLBACKS (then both are tried); `manage.py mfa_recovery_codes` issues new ones.
def _recovery_digest(user: Any, normal: str, secret: str) -> str:
    mac = salted_hmac("chemin.floor.mfa.recovery_code", f"{user.pk}:{normal}", secret=secret, algorithm="sha256")
    return base64.urlsafe_b64encode(mac.digest()).decode()[:16]


def _recovery_code_use(user: Any, normal: str) -> bool:
    """The recovery code used up if it is one of the user's, with django-otp's throttling
    (a wrong code slows his recovery codes down, not his authenticator), and on record: the
    auditor sees a login by recovery code, and how many codes the user has left (never the
    code). The row and its event commit together."""
    from .security import security_event

    with transaction.atomic():
        device = StaticDevice.objects.devices_for_user(user, confirmed=True).select_for_update().first()
        if device is None or not device.verify_is_allowed()[0]:
            return False
        keys = [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
        match = device.token_set.filter(token__in=[_recovery_digest(user, normal, key) for key in keys]).first()
        if match is None:
            device.throttle_increment()
            return False
        match.delete()
        device.throttle_reset(commit=False)
        device.set_last_used_timestamp(commit=False)
        device.save()
        security_event("auth.recovery_code_used", actor=user, user=user.pk, left=device.token_set.count())
    return True


def recovery_codes_left_after(user: Any, code: str | None) -> int | None:
    """After a login whose second factor was `code`: how many recovery codes the user has
    left when `code` was one of them (a login by recovery code says the phone is missing,
    and he must be told what is left), else None."""
    if _code_kind(code)[0] != "recovery":
        return None
    return StaticToken.objects.filter(device__user=user).count()


class RecoveryCodesRefused(Exception):
    pass


def recovery_codes_issue(*, user: Any) -> list[str]:
    """A new set of recovery codes for the user, in place of his old set (which stops working
    at once), returned to be shown this once: only their digests are kept. Refused for a user
    with no authenticator, since codes alone are no enrolment (mfa_enrolled)."""
    from django.contrib.auth import get_user_model

    from .security import security_event

    with transaction.atomic():
        # The user's row locked: two issues at once (two superusers) leave one set, not two.
        get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
        if not TOTPDevice.objects.filter(user=user).exists():
            raise RecoveryCodesRefused(
                f"{user.get_username()} has no authenticator: recovery codes back one up, enrol it first."
            )
        voided = StaticToken.objects.filter(device__user=user).count()
        for old in StaticDevice.objects.filter(user=user):
            old.delete()  # one by one: each removal is a security event (floor/security.py)
        device = StaticDevice.objects.create(user=user, name="recovery codes", confirmed=True)
        codes = [_recovery_new() for _ in range(RECOVERY_CODE_COUNT)]
        StaticToken.objects.bulk_create(
            StaticToken(device=device, token=_recovery_digest(user, _recovery_normal(code), settings.SECRET_KEY))
            for code in codes
        )
        security_event("auth.recovery_codes_issued", user=user.pk, username=user.get_username(),
                       count=len(codes), voided=voided)  # fmt: skip
    return codes


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
    "mfa_code_required": _(
        "Your role logs in with a one-time code: enter the code your authenticator shows, or one of your "
        "recovery codes."
    ),
    "mfa_code_invalid": _(
        "This code is not right, or was used already: enter your authenticator's current code, or a recovery "
        "code not used yet."
    ),
    "mfa_locked": _(
        "Too many wrong codes: this authenticator takes no code until %(time)s. Wait, or ask the back "
        "office to reset its throttling (admin, Authenticators)."
    ),
    "mfa_locked_recovery": _(
        "Too many wrong codes: your recovery codes are refused until %(time)s. Wait, or enter the code "
        "your authenticator shows."
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
            help_text=_(
                "Only for the roles that log in with an authenticator: the code it shows or, without "
                "your phone, one of your recovery codes (e.g. k7q2x-9xvmp)."
            ),
            required=False,
            max_length=16,
            strip=True,
            # (no numeric keypad: a recovery code has letters)
            widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "autocapitalize": "none", "spellcheck": "false"}),
        )

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)  # type: ignore[misc]
        code = self.cleaned_data.get("otp_token")
        request = getattr(self, "request", None)
        try:
            self.second_factor_verified = check_second_factor(user, code)  # type: ignore[attr-defined]
        except SecondFactorRefused as refused:
            self.second_factor_error = refused.code
            second_factor_failed(user, refused.code, request)
            raise ValidationError(refused.message, code=refused.code) from None
        left = recovery_codes_left_after(user, code) if self.second_factor_verified else None
        if request is not None and left is not None:
            # A recovery code says the phone is missing: tell him what is left, once, after the login.
            messages.warning(request, ngettext(
                "You logged in with a recovery code: %(left)d is left. Have your authenticator enrolled "
                "again (a superuser, in person); that gives you a new set of codes.",
                "You logged in with a recovery code: %(left)d are left. Have your authenticator enrolled "
                "again (a superuser, in person); that gives you a new set of codes.",
                left,
            ) % {"left": left})  # fmt: skip


class StaffAuthenticationForm(_SecondFactorMixin, AuthenticationForm):
    pass


class StaffAdminAuthenticationForm(_SecondFactorMixin, AdminAuthenticationForm):
    pass
