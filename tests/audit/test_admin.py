"""The admin shows the trail and never offers to edit it, not even to a superuser."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory

from audit.models import AuditEvent, AuditStream

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(user_factory):
    root = user_factory("root", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(root)
    return client, root


@pytest.mark.parametrize("model", [AuditEvent, AuditStream])
def test_nobody_may_add_change_or_delete(superuser_client, model):
    _, root = superuser_client
    request = RequestFactory().get("/")
    request.user = root
    model_admin = admin.site._registry[model]
    assert model_admin.has_view_permission(request)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert "delete_selected" not in model_admin.get_actions(request)


def test_the_pages_are_read_only(superuser_client, chain):
    client, _ = superuser_client
    event = chain("table:1", 1, pot=500)[0]
    stream = AuditStream.objects.get(name="table:1")  # (the login is in the "security" stream)

    assert client.get("/admin/audit/auditevent/").status_code == 200
    detail = client.get(f"/admin/audit/auditevent/{event.pk}/change/")
    assert detail.status_code == 200 and b'name="_save"' not in detail.content
    assert client.get("/admin/audit/auditevent/add/").status_code == 403
    assert client.post(f"/admin/audit/auditevent/{event.pk}/change/", {"action": "x"}).status_code == 403
    assert client.post(f"/admin/audit/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.post(f"/admin/audit/auditstream/{stream.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).action == "coup.recorded"


def test_search_by_subject_and_filter_by_action_and_stream(superuser_client, chain, user_factory):
    from django.db import transaction

    from audit.services import record

    client, root = superuser_client
    with transaction.atomic():
        about_root = record(stream="floor:day", actor=None, action="role.granted", subject=root)
    other = chain("table:1", 2)

    def listed(params) -> set[int]:
        response = client.get("/admin/audit/auditevent/", params)
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    assert listed({"q": str(root.pk)}) == {about_root.pk}
    assert listed({"action": "role.granted"}) == {about_root.pk}
    assert listed({"stream__id__exact": other[0].stream_id}) == {e.pk for e in other}
