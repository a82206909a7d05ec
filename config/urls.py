from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up code as a file, not an inline script: the
    # Content-Security-Policy (script-src 'self') allows nothing inline.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("audit.urls")),
    path("api/", include("tables.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("tables.urls_pages")),
    path("", include("floor.urls")),
]
