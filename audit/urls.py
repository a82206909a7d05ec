from django.urls import path

from .apis import AuditEventListApi, AuditStreamListApi, AuditVerifyApi

app_name = "audit"

urlpatterns = [
    path("audit/events/", AuditEventListApi.as_view(), name="events"),
    path("audit/streams/", AuditStreamListApi.as_view(), name="streams"),
    path("audit/verify/", AuditVerifyApi.as_view(), name="verify"),
]
