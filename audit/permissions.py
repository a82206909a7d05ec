"""Who may read the audit trail."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from floor.roles import Role, has_role

AUDIT_READERS = (Role.AUDITOR, Role.DIREZIONE, Role.COMMISSARIO)


class CanReadAudit(BasePermission):
    """Auditors, management and the floor manager read the trail; nobody writes it through
    the API (events are only ever appended by the services of the change they record)."""

    message = "Reading the audit trail needs the auditor, direzione or commissario role."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, *AUDIT_READERS)
