"""Enrol a user's authenticator (TOTP) from the server: how the first superuser gets his
second factor, since the admin where superusers enrol the others asks him for a code.

    python manage.py mfa_enrol admin                 # prints the QR code and the secret
    python manage.py mfa_enrol admin --replace       # a new phone: the old one stops working

Each enrolment issues the user's recovery codes too (floor/mfa.py), printed once under the
QR code, in place of any he had: give them to him with it, on paper.

Whoever runs it holds the server, so this asks nothing more; the enrolment is a security
event (floor.security) like one made in the admin, with the server's account that ran it
(no user of the site made it). Show the QR code to the user in person."""

from __future__ import annotations

import base64
import getpass
import io
import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from floor.mfa import recovery_codes_issue
from floor.security import security_event


class Command(BaseCommand):
    help = "Enrol a TOTP authenticator for a user: prints its QR code and secret once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="authenticator", help="What to call the device (e.g. 'phone').")
        parser.add_argument(
            "--replace", action="store_true", help="Remove the user's other authenticators (a lost or new phone)."
        )

    def handle(self, *args, username: str, name: str, replace: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        with transaction.atomic():
            existing = TOTPDevice.objects.filter(user=user)
            if existing.exists() and not replace:
                raise CommandError(
                    f"{username} has an authenticator already: --replace to enrol a new one instead of it."
                )
            for device in existing:
                device.delete()  # one by one: each removal is a security event
            device = TOTPDevice.objects.create(user=user, name=name[:64], confirmed=True)
            security_event("auth.authenticator_enrolled_from_server", user=user.pk, device=device.pk,
                           os_user=_os_user())  # fmt: skip
            codes = recovery_codes_issue(user=user)
        url = device.config_url
        secret = base64.b32encode(device.bin_key).decode()
        self.stdout.write(f"Authenticator enrolled for {username}. Scan this QR code with the app, in person:\n")
        self.stdout.write(_qr_text(url))
        self.stdout.write(f"\nOr enter the secret by hand: {secret}\n(as a link: {url})\n")
        self.stdout.write("It is shown this once: the admin shows it again only to a superuser.\n")
        self.stdout.write(_recovery_text(username, codes))


def _recovery_text(username: str, codes: list[str]) -> str:
    lines = "\n".join(f"  {n:2d}. {code}" for n, code in enumerate(codes, 1))
    return (
        f"Recovery codes of {username}, for the day the phone is lost: each works once, in place of the "
        f"authenticator's code.\n{lines}\n"
        "Shown this once (only their digests are kept): print them or write them down for him, to keep "
        "apart from the phone. New ones, which void these: manage.py mfa_recovery_codes."
    )


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


def _qr_text(data: str) -> str:
    import qrcode

    qr = qrcode.QRCode(border=2)
    qr.add_data(data)
    out = io.StringIO()
    qr.print_ascii(out=out, invert=True)
    return out.getvalue()
