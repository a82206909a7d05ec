from django.apps import AppConfig


class FloorConfig(AppConfig):
    default = True  # (this module holds another app's config too: "floor" is this one)
    name = "floor"
    verbose_name = "Floor"

    def ready(self) -> None:
        # The beat task that closes due gaming days, registered in every process (see audit.apps).
        from . import checks, tasks  # noqa: F401  (the database checks, the beat task)
        from .security import connect

        connect()  # security events on record; the admin's login throttled (floor/security.py)


class AuthenticatorsConfig(AppConfig):
    """django-otp's TOTP devices, under a name the back office reads in the admin
    ("Authenticators" rather than "OTP_TOTP"). Same app, label and tables."""

    name = "django_otp.plugins.otp_totp"
    label = "otp_totp"
    verbose_name = "Authenticators (one-time codes)"
    default_auto_field = "django.db.models.AutoField"
