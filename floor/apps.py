from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class FloorConfig(AppConfig):
    default = True  # (this module holds another app's config too: "floor" is this one)
    name = "floor"
    verbose_name = "Floor"

    def ready(self) -> None:
        # The beat task that closes due gaming days, registered in every process (see audit.apps).
        from . import checks, schema, tasks  # noqa: F401  (the database checks, the docs' logins, the beat task)
        from .security import connect

        connect()  # security events on record; the admin's login throttled (floor/security.py)


class AuthenticatorsConfig(AppConfig):
    """django-otp's TOTP devices, under a name the back office reads in the admin
    ("Authenticators" rather than "OTP_TOTP"). Same app, label and tables."""

    name = "django_otp.plugins.otp_totp"
    label = "otp_totp"
    verbose_name = "Authenticators (one-time codes)"
    default_auto_field = "django.db.models.AutoField"


class RecoveryCodesConfig(AppConfig):
    """django-otp's static devices: each user's single-use recovery codes (floor/mfa.py), for
    the day his phone is lost. Same app, label and tables as django-otp's own."""

    name = "django_otp.plugins.otp_static"
    label = "otp_static"
    verbose_name = _("Recovery codes (second factor)")
    default_auto_field = "django.db.models.AutoField"
