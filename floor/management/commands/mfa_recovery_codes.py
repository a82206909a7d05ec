"""Issue a user's recovery codes from the server (floor/mfa.py): when he has used or lost
his set, or suspects someone has seen it. The new set is printed once and the old one
stops working at once.

    python manage.py mfa_recovery_codes commissario

Only for a user with an authenticator: recovery codes back one up, they are no enrolment
(`manage.py mfa_enrol` first). Whoever runs it holds the server; the issue is a security
event. Give the codes to the user in person."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from floor.mfa import RecoveryCodesRefused, recovery_codes_issue

from .mfa_enrol import _recovery_text


class Command(BaseCommand):
    help = "Issue a user's recovery codes (the old ones stop working): prints them once."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        try:
            codes = recovery_codes_issue(user=user)
        except RecoveryCodesRefused as refused:
            raise CommandError(str(refused)) from None
        self.stdout.write(_recovery_text(username, codes))
