from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from config.health import healthz, readyz
from config.metrics import metrics_view
from config.schema import SchemaView


def _login_first(view):
    """The API docs for a browser with no session: the login page, which comes back here,
    rather than a bare English 401 (a client sending its token is left to the API's own)."""

    def docs(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if response.status_code == 401 and "HTTP_AUTHORIZATION" not in request.META:
            return redirect_to_login(request.get_full_path())
        return response

    return docs


# A request refused before any view (a Host header not allowed...): on /api/, the error shape.
handler400 = "config.errors.bad_request"

urlpatterns = [
    # Operations (no auth: config/health.py; /metrics is access-controlled in config/metrics.py).
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up code as a file, not an inline script: the
    # Content-Security-Policy (script-src 'self') allows nothing inline.
    # Swagger UI (drf-spectacular-sidecar, pinned) adds one <style> element of its own: that
    # element's hash is allowed on this page, nothing else inline.
    path(
        "api/docs/",
        csp_update({"style-src": ["'sha256-MMpT0iDxyjALd9PdfepImGX3DBfJPXZ4IlDWdPAgtn0='"]})(
            _login_first(SpectacularSwaggerSplitView.as_view(url_name="schema"))
        ),
        name="api-docs",
    ),
    path("api/", include("audit.urls")),
    path("api/", include("tables.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("tables.urls_pages")),
    path("", include("audit.urls_pages")),
    path("", include("floor.urls")),
]
