"""Security events on record, and the Django admin's login behind the same throttle.

Logins (browser, admin, API token), failed logins, logouts, token issue and revocation,
role changes and password changes are audit events in the `security` stream, in the
transaction of the change where there is one. A password change (or a user made inactive)
revokes the user's API tokens: a token must not outlive the credentials it was issued on.

Failed logins are recorded only when the password was checked: a refusal by the throttle
(429) writes nothing, so a guesser can't fill the trail faster than the throttle allows."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME, get_user_model
from django.contrib.auth.hashers import identify_hasher, is_password_usable
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _

from audit.services import record

from .auth import client_address
from .mfa import StaffAdminAuthenticationForm
from .roles import role_conflict

STREAM = "security"
_CONTROL = dict.fromkeys(range(32)) | {0x7F: None}


def _clean(text: Any, limit: int = 150) -> str:
    # Whatever a login form was sent, as text the trail accepts: no control characters.
    return str(text or "").translate(_CONTROL)[:limit]


# The request being served, for the events its changes cause through signals (a role given,
# a password set, an authenticator enrolled in the admin): they name who made the change.
_current_request: ContextVar[HttpRequest | None] = ContextVar("chemin_security_request", default=None)


class RequestActorMiddleware:
    """After AuthenticationMiddleware: the request in a contextvar for security_event."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _current_request.set(request)
        try:
            return self.get_response(request)
        finally:
            _current_request.reset(token)


def security_event(action: str, *, actor: Any = None, request: HttpRequest | None = None, **data: Any) -> None:
    if not settings.SECURITY_EVENTS:
        return  # (the test settings: the suite's own logins and role grants stay out of its counts)
    if request is None:
        request = _current_request.get()
        user = getattr(request, "user", None) if request is not None else None
        if actor is None and user is not None and user.is_authenticated:
            actor = user  # the admin (or API user) whose change this is
    if request is not None:
        data["address"] = _clean(client_address(request), 64)
    with transaction.atomic():
        record(stream=STREAM, actor=actor, action=action, data=data)


def _logged_in(sender, request, user, **kwargs) -> None:
    security_event("auth.logged_in", actor=user, request=request, via="browser")


def _logged_out(sender, request, user, **kwargs) -> None:
    if user is not None:
        security_event("auth.logged_out", actor=user, request=request, via="browser")


def _login_failed(sender, credentials, request=None, **kwargs) -> None:
    security_event("auth.login_failed", request=request, username=_clean(credentials.get("username")))


def _roles_changed(sender, instance, action, pk_set, **kwargs) -> None:
    if action not in ("post_add", "post_remove", "post_clear") or not isinstance(instance, get_user_model()):
        return
    if action != "post_clear" and not pk_set:
        return  # add() of roles he has already: nothing changed
    from django.contrib.auth.models import Group

    names = sorted(Group.objects.filter(pk__in=pk_set or ()).values_list("name", flat=True))
    security_event(
        "auth.roles_changed", user=instance.pk, username=instance.get_username(), change=action[5:], groups=names,
        now=sorted(instance.groups.values_list("name", flat=True)),
    )  # fmt: skip


class RoleConflict(ValidationError):
    """Roles one person may not hold together (floor.roles.role_conflict)."""

    code = "role_conflict"


def _roles_checked(sender, instance, action, pk_set, reverse, **kwargs) -> None:
    """Before roles are added, by any path (the admin, a shell, `group.user_set.add`): refuse a
    combination that segregation of duties forbids. The admin's form says it first."""
    if action != "pre_add" or not pk_set:
        return
    from django.contrib.auth.models import Group

    user_model = get_user_model()
    # The users' rows locked: two additions at once to one user (two admins, two roles) wait
    # for each other, so each sees the roles the other gave.
    if reverse:  # group.user_set.add(users): one role for each of these users
        users = user_model.objects.select_for_update().filter(pk__in=pk_set).order_by("pk")
        additions = [(user, {instance.name}) for user in users]
    else:
        user_model.objects.select_for_update().filter(pk=instance.pk).exists()
        additions = [(instance, set(Group.objects.filter(pk__in=pk_set).values_list("name", flat=True)))]
    for user, names in additions:
        held = set(user.groups.values_list("name", flat=True))
        conflict = role_conflict(held | names, superuser=user.is_superuser)
        if conflict:
            raise RoleConflict(
                f"{user.get_username()} may not hold these roles together: {', '.join(conflict)}.",
                code="role_conflict",
            )


def _privileges_changed(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    """Superuser and staff status changes are on record. (A superuser who keeps a role that
    records, handles or audits the play has none in force: floor.roles; the admin's form
    refuses the combination, the groups' guard refuses adding such a role to a superuser.)"""
    if raw or instance.pk is None or (update_fields is not None and not {"is_superuser", "is_staff"} & set(update_fields)):
        return
    before = sender.objects.filter(pk=instance.pk).values("is_superuser", "is_staff").first()
    if before is not None:
        changed = {f: getattr(instance, f) for f in ("is_superuser", "is_staff") if before[f] != getattr(instance, f)}
        if changed:
            security_event("auth.privileges_changed", user=instance.pk, username=instance.get_username(), **changed)


def _rehashed(old: str, instance: Any, update_fields: Any) -> bool:
    """Django upgrading a stored hash at a login (check_password's setter saves the password
    alone, with _password cleared): the same password under a stronger hash, no change to put
    on record. Anything else that saves the password alone (set_unusable_password, a reset in
    code) is a change: the old hash must have been due for the upgrade, the new one usable."""
    if update_fields is None or set(update_fields) != {"password"} or getattr(instance, "_password", 1) is not None:
        return False
    if not (is_password_usable(old) and instance.has_usable_password()) or old == instance.password:
        return False
    try:
        hasher = identify_hasher(old)
    except ValueError:
        return False
    return hasher.must_update(old) or hasher.algorithm != identify_hasher(instance.password).algorithm


def _credentials_changed(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    if raw or instance.pk is None or (update_fields is not None and not {"password", "is_active"} & set(update_fields)):
        return
    before = sender.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    if _rehashed(before["password"], instance, update_fields):
        return
    changed = [f for f in ("password", "is_active") if before[f] != getattr(instance, f)]
    if not changed:
        return
    from .models import ApiToken

    revoked = ApiToken.objects.filter(user_id=instance.pk).delete()[0]
    security_event(
        "auth.credentials_changed", user=instance.pk, username=instance.get_username(),
        changed=changed, active=instance.is_active, tokens_revoked=revoked,
    )  # fmt: skip


def _authenticator_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if created and not raw:
        security_event("auth.authenticator_enrolled", user=instance.user_id, name=_clean(instance.name),
                       confirmed=instance.confirmed)  # fmt: skip


def _authenticator_changing(sender, instance, raw=False, **kwargs) -> None:
    # Every login saves the device (its last code, its throttle): only a new key, owner or
    # confirmation is a change worth recording.
    if raw or instance.pk is None:
        return
    before = sender.objects.filter(pk=instance.pk).values("key", "user_id", "confirmed").first()
    if before and (before["key"], before["user_id"], before["confirmed"]) != (
        instance.key, instance.user_id, instance.confirmed
    ):
        security_event("auth.authenticator_changed", user=instance.user_id, name=_clean(instance.name),
                       rekeyed=before["key"] != instance.key, confirmed=instance.confirmed)  # fmt: skip


def _authenticator_deleted(sender, instance, **kwargs) -> None:
    security_event("auth.authenticator_removed", user=instance.user_id, name=_clean(instance.name))


def _recovery_codes_deleted(sender, instance, **kwargs) -> None:
    # A set replaced by a new one (floor.mfa.recovery_codes_issue), or removed in the admin.
    security_event("auth.recovery_codes_removed", user=instance.user_id)


def admin_login(request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
    """AdminSite.login, through the throttled login view: the admin's login had no throttle
    of its own, for the most powerful accounts."""
    from .views import ThrottledLoginView

    site = admin.site
    if request.method == "GET" and site.has_permission(request):
        return HttpResponseRedirect(reverse("admin:index", current_app=site.name))
    context = {
        **site.each_context(request),
        "title": _("Log in"),
        "subtitle": None,
        "app_path": request.get_full_path(),
        "username": request.user.get_username(),
    }
    if REDIRECT_FIELD_NAME not in request.GET and REDIRECT_FIELD_NAME not in request.POST:
        context[REDIRECT_FIELD_NAME] = reverse("admin:index", current_app=site.name)
    context.update(extra_context or {})
    request.current_app = site.name
    return ThrottledLoginView.as_view(
        authentication_form=StaffAdminAuthenticationForm,
        template_name="admin/login.html",
        extra_context=context,
        redirect_authenticated_user=False,
    )(request)


def connect() -> None:
    user_model = get_user_model()
    user_logged_in.connect(_logged_in, dispatch_uid="chemin_security_logged_in")
    user_logged_out.connect(_logged_out, dispatch_uid="chemin_security_logged_out")
    user_login_failed.connect(_login_failed, dispatch_uid="chemin_security_login_failed")
    m2m_changed.connect(_roles_checked, sender=user_model.groups.through, dispatch_uid="chemin_roles_checked")
    m2m_changed.connect(_roles_changed, sender=user_model.groups.through, dispatch_uid="chemin_security_roles")
    pre_save.connect(_credentials_changed, sender=user_model, dispatch_uid="chemin_security_credentials")
    pre_save.connect(_privileges_changed, sender=user_model, dispatch_uid="chemin_security_privileges")
    admin.site.login = admin_login
    from django_otp.plugins.otp_totp.models import TOTPDevice

    pre_save.connect(_authenticator_changing, sender=TOTPDevice, dispatch_uid="chemin_security_totp_changing")
    post_save.connect(_authenticator_saved, sender=TOTPDevice, dispatch_uid="chemin_security_totp_saved")
    post_delete.connect(_authenticator_deleted, sender=TOTPDevice, dispatch_uid="chemin_security_totp_deleted")
    from django_otp.plugins.otp_static.models import StaticDevice

    post_delete.connect(_recovery_codes_deleted, sender=StaticDevice, dispatch_uid="chemin_security_static_deleted")
