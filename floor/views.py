"""Browser pages: login (throttled like the token API), logout, and the home page."""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .auth import (
    THROTTLE_UNAVAILABLE,
    UNAVAILABLE_RETRY_AFTER_SECONDS,
    client_address,
    login_blocked,
    login_failed,
    login_succeeded,
)
from .mfa import ENDED_KEY as MFA_ENDED_KEY
from .mfa import SESSION_KEY as MFA_SESSION_KEY
from .mfa import StaffAuthenticationForm
from .roles import Role, user_roles

logger = logging.getLogger(__name__)

ROLE_TITLES = {
    Role.COMMISSARIO: "Commissario di Gioco",
    Role.CAPO_PARTITA: "Capo Partita",
    Role.CHANGEUR: "Changeur",
    Role.AUDITOR: gettext_lazy("Auditor"),
    Role.DIREZIONE: "Direzione Giochi",
}
ROLE_TASKS = {
    Role.COMMISSARIO: gettext_lazy(
        "Open and close gaming days and table sessions, seat patrons, change minimums."
    ),
    Role.CAPO_PARTITA: gettext_lazy("Run your table's sessions and record their coups."),
    Role.CHANGEUR: gettext_lazy("Follow the sessions of the tables you serve."),
    Role.AUDITOR: gettext_lazy("Read the floor, the coups and the audit trail."),
    Role.DIREZIONE: gettext_lazy(
        "Set up tables, suspend and resume play, decide disputes, sign the control register; the back office."
    ),
}


def _page(name: str) -> str | None:
    # The pages live in tables (tables.urls_pages); floor never imports tables' pages, it names them.
    try:
        return reverse(name)
    except NoReverseMatch:
        return None


class ThrottledLoginView(LoginView):
    """Django's login page with the same failed-login throttle as POST /api/auth/token/."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True
    authentication_form = StaffAuthenticationForm  # the password, then the one-time code (floor/mfa.py)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.request.session.pop(MFA_ENDED_KEY, None) == "second_factor_required":
            context["ended"] = _(
                "Your session was ended: your role now logs in with a one-time code. Log in again with "
                "the code of your authenticator."
            )
        return context

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return self._throttled_post(request, *args, **kwargs)
        except THROTTLE_UNAVAILABLE as exc:
            # The failed-login counts are out of reach: refuse rather than let guesses through
            # uncounted (floor/auth.py). Raised before the session login (form_valid counts
            # first), so nothing is written: no session, no last_login.
            logger.warning("login refused: the failed-login throttle's cache is unreachable (%s)", exc)
            response = render(request, "503.html", {"retry_url": request.get_full_path()}, status=503)
            response["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER_SECONDS)
            return response

    def _throttled_post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        username = request.POST.get("username", "")
        if login_blocked(username=username, address=client_address(request)):
            # Refused before the password is checked (floor/auth.py).
            form = self.get_form_class()(request, initial={"username": username})
            context = self.get_context_data(form=form, throttled=True)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        if getattr(form, "second_factor_error", None) != "mfa_locked":  # (may be a right code, refused)
            login_failed(username=self.request.POST.get("username", ""), address=client_address(self.request))
        # The password was right and the one-time code is what is missing or wrong: say so,
        # not "wrong username or password" (the code can only be asked once the password is).
        return self.render_to_response(
            self.get_context_data(form=form, second_factor=getattr(form, "second_factor_error", None))
        )

    def form_valid(self, form):
        login_succeeded(username=form.get_user().get_username(), address=client_address(self.request))
        response = super().form_valid(form)  # (the login: a new session key)
        self.request.session[MFA_SESSION_KEY] = bool(getattr(form, "second_factor_verified", False))
        return response


@login_required
def home(request: HttpRequest) -> HttpResponse:
    roles = [role for role in Role if role in user_roles(request.user)]
    places = [
        {"role": role, "title": ROLE_TITLES[role], "task": ROLE_TASKS[role]} for role in roles
    ]
    links = []
    # Each role first to its own screen: the Capo Partita to his tablet, the Commissario to
    # the floor dashboard; the auditor (and the Direzione, for the books) to the desk.
    if (Role.CAPO_PARTITA in roles or Role.CHANGEUR in roles) and _page("tablet"):
        links.append({"url": _page("tablet"), "label": _("Tablet: your tables")})
    if (Role.COMMISSARIO in roles or Role.DIREZIONE in roles) and _page("floor-dashboard"):
        links.append({"url": _page("floor-dashboard"), "label": _("Floor dashboard")})
    if (Role.AUDITOR in roles or Role.DIREZIONE in roles) and _page("desk"):
        links.append({"url": _page("desk"), "label": _("Auditor's desk: gaming days, reports, verification")})
    elif Role.COMMISSARIO in roles and _page("desk"):
        # He deposits the unclaimed stakes and winnings there, on the day's page (RULES.md §6).
        links.append({"url": _page("desk"), "label": _("The days' books: unclaimed stakes and winnings, reports")})
    if roles:
        # Every staff role may work through the API: its documentation is the place to start.
        links.append({"url": reverse("api-docs"), "label": _("API documentation")})
    if request.user.is_staff and (Role.DIREZIONE in roles or request.user.is_superuser):
        links.append({"url": reverse("admin:index"), "label": _("Back office (admin)")})
    return render(request, "home.html", {"places": places, "links": links})
