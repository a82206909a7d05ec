"""The pages' htmx requests when the user himself is refused: not logged in any more, a
stale form (CSRF), his role or his table taken from him. htmx swaps an answer into a panel
(a tablet, a table card); a whole page there, or a login page, would strand the croupier.

- `refusal`: for an htmx request, the refusal replaces the page's content (HX-Retarget
  #main) rather than nesting inside the panel; for a plain request, the whole page.
- `HtmxLoginRedirectMiddleware`: a login redirect answering an htmx post (the session
  expired mid-coup) becomes a full-page redirect to the login (HX-Redirect), which then
  comes back to the page the post came from, not to the post's address.
- `csrf_failure` (CSRF_FAILURE_VIEW): a form whose CSRF token went stale says so, in the
  user's language, with a button to reload the page."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _same_site_path(request: HttpRequest, raw: str) -> str | None:
    """The path (and query) of `raw` when it is a URL of this site, else None: never a link
    to another host, whatever the header says (Django's own check, as the login's `next`)."""
    if not url_has_allowed_host_and_scheme(raw, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return None
    parts = urlsplit(raw)
    if not parts.path.startswith("/") or "\\" in parts.path:
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def current_page(request: HttpRequest) -> str | None:
    """The page the request came from, on this site: an htmx request's HX-Current-URL, or a
    plain form post's Referer."""
    return _same_site_path(request, request.headers.get("HX-Current-URL") or request.headers.get("Referer") or "")


def refusal(
    request: HttpRequest,
    *,
    status: int,
    message: str,
    title: str | None = None,
    reload_url: str | None = None,
    queue: str | None = None,
) -> HttpResponse:
    """`queue`: the tablet queue (chemin.js) of the page refused, whose entries waiting on the
    device are still listed and sent from here, to be answered (refused, with the reason)."""
    context = {"message": message, "title": title, "reload_url": reload_url, "queue": queue}
    if is_htmx(request):
        response = render(request, "_refusal.html", context, status=status)
        response["HX-Retarget"] = "#main"
        response["HX-Reswap"] = "innerHTML"
        return response
    return render(request, "403.html", context, status=status)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return refusal(
        request,
        status=403,
        title=_("This page is out of date"),
        message=_(
            "This page's form has expired (you logged in again, or the page was open too long). "
            "Nothing was entered: reload the page, then enter it again."
        ),
        reload_url=current_page(request),
    )


class HtmxLoginRedirectMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if is_htmx(request) and response.status_code in (301, 302):
            login = resolve_url(settings.LOGIN_URL)
            if urlsplit(response.get("Location", "")).path == login:
                page = current_page(request) or resolve_url(settings.LOGIN_REDIRECT_URL)
                redirect = HttpResponse(status=204)
                redirect["HX-Redirect"] = f"{login}?{urlencode({'next': page})}"
                return redirect
        return response
