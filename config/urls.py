from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.health import healthz, readyz
from config.metrics import metrics_view

urlpatterns = [
    # Operations (no auth: config/health.py; /metrics is access-controlled in config/metrics.py).
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up code as a file, not an inline script: the
    # Content-Security-Policy (script-src 'self') allows nothing inline.
    # Swagger UI (drf-spectacular-sidecar, pinned) adds one <style> element of its own: that
    # element's hash is allowed on this page, nothing else inline.
    path(
        "api/docs/",
        csp_update({"style-src": ["'sha256-MMpT0iDxyjALd9PdfepImGX3DBfJPXZ4IlDWdPAgtn0='"]})(
            SpectacularSwaggerSplitView.as_view(url_name="schema")
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
