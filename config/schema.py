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


def doc_excludes() -> list[type]:
    """SPECTACULAR_SETTINGS["GET_LIB_DOC_EXCLUDES"]: the classes whose docstrings never
    describe an operation. drf-spectacular describes an operation without its own description
    by the first docstring in its view's bases: a list or a view that says nothing of itself
    was described by the plumbing it inherits, written for the project's developers ("Honours
    (or, with `idempotency_required = True`, demands) the Idempotency-Key header... Put it first
    among the bases.", "GET: the selector's queryset, filtered and paginated."). Such an
    operation now has no description rather than a wrong one."""
    from drf_spectacular.plumbing import get_lib_doc_excludes

    from config.api import TakesNoBody
    from floor.apis import _ListApi
    from floor.idempotency import IdempotentAPIView, IdempotentMixin

    return [*get_lib_doc_excludes(), IdempotentMixin, IdempotentAPIView, TakesNoBody, _ListApi]
