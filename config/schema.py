"""The OpenAPI document's view (apart from config.api, which DRF's settings import: the
views module must not be imported while DRF itself is loading)."""

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response


class SchemaView(SpectacularAPIView):
    """The OpenAPI document (YAML unless `?format=json` or an Accept asks for JSON). Its
    refusals (401 without a token, 403 without a staff role, 406...) are the API's JSON error
    shape whatever format was asked: a client reading the error expects the shape every other
    endpoint answers, not that error serialized as YAML under an OpenAPI media type."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if response.status_code >= 400 and isinstance(response, Response):
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = "application/json"
            response["Content-Type"] = "application/json"
        return response
