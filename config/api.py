"""API plumbing shared by the apps: pagination and the error schema for the docs."""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `minimum_out_of_range`.")
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


# The error responses the schema documents, shared by every app's API.
ERROR_RESPONSE = OpenApiResponse(ErrorSerializer)
LIST_ERRORS = {401: ERROR_RESPONSE, 403: ERROR_RESPONSE}
READ_ERRORS = {**LIST_ERRORS, 404: ERROR_RESPONSE}
WRITE_ERRORS = {400: ERROR_RESPONSE, **READ_ERRORS, 409: ERROR_RESPONSE}
