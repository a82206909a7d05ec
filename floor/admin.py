"""The floor in the back office. Read-only on purpose: every change to the floor goes
through floor/services.py so that it is validated, locked and written to the audit trail
(ARCHITECTURE.md); an admin form would bypass all three. The Direzione reads here, and
acts through the API."""

import re

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .mfa import recovery_codes_issue
from .models import (
    Casino,
    GamingDay,
    MinimumChange,
    Patron,
    Seat,
    SessionInterruption,
    Site,
    StaffChange,
    Table,
    TableSession,
)
from .roles import role_conflict, role_names
from .security import RoleConflict


class StaffUserChangeForm(UserChangeForm):
    """The user's roles are his groups: a combination that segregation of duties forbids
    (floor.roles.role_conflict) is refused here with a plain message, before the database's
    guard (floor.security) would refuse it."""

    def clean(self):
        cleaned = super().clean()
        groups = cleaned.get("groups")
        if groups is not None:
            conflict = role_conflict((group.name for group in groups), superuser=bool(cleaned.get("is_superuser")))
            if conflict:
                self.add_error(
                    "groups",
                    _("One person may not hold these roles together: %(roles)s. Only Commissario and "
                      "Direzione go together, and a superuser is not also Capo Partita, changeur or "
                      "auditor.") % {"roles": role_names(conflict)},
                )  # fmt: skip
        return cleaned


admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class StaffUserAdmin(UserAdmin):
    form = StaffUserChangeForm

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        """The form checks the roles it shows; another admin may give this user a role between
        that check and the save. The groups' guard then refuses the save (floor.security),
        the whole change is rolled back (the admin saves in one transaction), and this admin
        is told so and sees the user as he now is, rather than an error page."""
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except RoleConflict:
            self.message_user(
                request,
                _("Nothing was saved: this user's roles were changed by someone else at the same "
                  "moment, and together with yours they would break the segregation of duties. "
                  "Check his roles as they are now and try again."),
                messages.ERROR,
            )  # fmt: skip
            return HttpResponseRedirect(request.get_full_path())


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class SiteInline(admin.TabularInline):
    model = Site
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Casino)
class CasinoAdmin(ReadOnlyAdmin):
    list_display = ["name", "code"]
    search_fields = ["name", "code"]
    inlines = [SiteInline]


@admin.register(Site)
class SiteAdmin(ReadOnlyAdmin):
    list_display = ["name", "casino"]
    list_filter = ["casino"]
    list_select_related = ["casino"]


@admin.register(Table)
class TableAdmin(ReadOnlyAdmin):
    list_display = ["number", "casino", "site", "seats", "profile", "decks", "cagnotte_rate_bp", "min_seats_to_start", "active"]
    list_filter = ["casino", "site", "profile", "seats", "active"]
    list_select_related = ["casino", "site"]


class TableSessionInline(admin.TabularInline):
    model = TableSession
    extra = 0
    can_delete = False
    fields = ["table", "number", "status", "capo_partita", "changeur", "shoe_number", "minimum", "opened_at", "closed_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(GamingDay)
class GamingDayAdmin(ReadOnlyAdmin):
    list_display = ["date", "casino", "opened_at", "opened_by", "closed_at", "closed_by"]
    list_filter = ["casino", ("closed_at", admin.EmptyFieldListFilter)]
    date_hierarchy = "date"
    list_select_related = ["casino", "opened_by", "closed_by"]
    inlines = [TableSessionInline]


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    can_delete = False
    fields = ["seat_number", "standing", "patron", "taken_at", "left_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class InterruptionInline(admin.TabularInline):
    model = SessionInterruption
    extra = 0
    can_delete = False
    fields = ["interrupted_at", "interrupted_by", "interrupted_as", "reason", "resumed_at", "resumed_by", "resume_reason"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class MinimumChangeInline(admin.TabularInline):
    model = MinimumChange
    extra = 0
    can_delete = False
    fields = ["at", "by", "old", "new", "reason"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class StaffChangeInline(admin.TabularInline):
    model = StaffChange
    fk_name = "session"
    extra = 0
    can_delete = False
    fields = ["at", "by", "old_capo_partita", "new_capo_partita", "old_changeur", "new_changeur", "reason"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(TableSession)
class TableSessionAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "gaming_day", "table", "number", "status", "capo_partita", "changeur", "shoe_number", "minimum", "maximum", "opened_at", "closed_at"]
    list_filter = ["status", "table__casino", "table", "gaming_day__date"]
    search_fields = ["shoe_number", "capo_partita__username", "changeur__username"]
    list_select_related = ["table", "gaming_day", "capo_partita", "changeur"]
    inlines = [SeatInline, InterruptionInline, MinimumChangeInline, StaffChangeInline]


@admin.register(SessionInterruption)
class SessionInterruptionAdmin(ReadOnlyAdmin):
    list_display = ["session", "interrupted_at", "interrupted_by", "interrupted_as", "reason", "resumed_at", "resumed_by"]
    list_filter = [("resumed_at", admin.EmptyFieldListFilter)]
    list_select_related = ["session", "interrupted_by", "resumed_by"]


@admin.register(MinimumChange)
class MinimumChangeAdmin(ReadOnlyAdmin):
    list_display = ["session", "at", "by", "old", "new", "reason"]
    list_select_related = ["session", "by"]
    date_hierarchy = "at"


@admin.register(Patron)
class PatronAdmin(ReadOnlyAdmin):
    list_display = ["last_name", "first_name", "document_type", "document_number", "nationality", "birth_date", "created_at"]
    list_filter = ["nationality", "document_type"]
    search_fields = ["last_name", "first_name", "document_number"]


@admin.register(Seat)
class SeatAdmin(ReadOnlyAdmin):
    list_display = ["session", "seat_number", "standing", "patron", "taken_at", "left_at"]
    list_filter = ["standing", ("left_at", admin.EmptyFieldListFilter)]
    search_fields = ["patron__last_name", "patron__document_number"]
    list_select_related = ["session", "patron"]


# --------------------------------------------------------------------------- authenticators

# A TOTP secret in hexadecimal: RFC 4226 asks at least 128 bits (160 recommended, django-otp's
# default); django-otp's column holds 40 bytes.
AUTHENTICATOR_KEY = re.compile(r"(?:[0-9a-f]{2}){16,40}")


def _authenticators_admin():
    """django-otp's TOTP devices admin, whose QR code pages answer 500 for a device that
    does not exist (a stale link, a typed address): 404 instead."""
    from django.http import Http404
    from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
    from django_otp.plugins.otp_totp.models import TOTPDevice, default_key

    class AuthenticatorForm(forms.ModelForm):
        """The key as a person types it: spaces and capitals forgiven, and a refusal that says
        what a key is, where django-otp's echoes the typed secret back in a Python repr."""

        # (longer than the column: a key may be typed in groups with spaces)
        key = forms.CharField(
            max_length=200,
            initial=default_key,
            help_text=gettext_lazy("The secret the authenticator app is given: 32 to 80 hexadecimal "
                                   "characters (0-9, a-f). Keep the one proposed for a new authenticator."),
        )  # fmt: skip

        class Meta:
            model = TOTPDevice
            fields = ["key"]  # (the admin's fieldsets add the others)

        def clean_key(self):
            key = "".join((self.cleaned_data.get("key") or "").split()).lower()
            if not AUTHENTICATOR_KEY.fullmatch(key):
                raise forms.ValidationError(
                    _("A key is 32 to 80 hexadecimal characters (0-9, a-f), an even number of them."),
                    code="authenticator_key",
                )
            return key

    class AuthenticatorAdmin(TOTPDeviceAdmin):
        form = AuthenticatorForm
        actions = ["issue_recovery_codes"]

        def _existing(self, pk):
            if not TOTPDevice.objects.filter(pk=pk).exists():
                raise Http404
            return pk

        def config_view(self, request, pk):
            return super().config_view(request, self._existing(pk))

        def qrcode_view(self, request, pk):
            return super().qrcode_view(request, self._existing(pk))

        def response_add(self, request, obj, post_url_continue=None):
            # An enrolment issues the user's recovery codes (floor/mfa.py), shown on this answer
            # alone, with the way on to the QR code: both go to the user together, in person.
            # (Still inside the admin's transaction: the device and its codes, or neither.)
            return _recovery_codes_page(request, [(obj.user, recovery_codes_issue(user=obj.user))], device=obj)

        @admin.action(description=gettext_lazy("Issue new recovery codes (the old ones stop working)"),
                      permissions=["change"])  # fmt: skip
        def issue_recovery_codes(self, request, queryset):
            users = {device.user_id: device.user for device in queryset.select_related("user")}
            issued = [(user, recovery_codes_issue(user=user)) for _, user in sorted(users.items())]
            return _recovery_codes_page(request, issued)

    if admin.site.is_registered(TOTPDevice):
        admin.site.unregister(TOTPDevice)
    admin.site.register(TOTPDevice, AuthenticatorAdmin)


_authenticators_admin()


def _recovery_codes_page(request, issued, device=None):
    """The codes just issued, on this page only: nothing else shows them again (only their
    digests are kept), and no cache may keep the page."""
    from django.template.response import TemplateResponse
    from django.utils.cache import add_never_cache_headers

    context = {**admin.site.each_context(request), "issued": issued, "device": device,
               "title": _("Recovery codes")}  # fmt: skip
    response = TemplateResponse(request, "otp_static/admin/recovery_codes.html", context).render()
    add_never_cache_headers(response)
    return response


def _recovery_codes_admin():
    """django-otp's static devices admin showed and took the tokens themselves (a typed one
    would be kept in clear, and never match: floor/mfa.py keeps digests). Here: who has how
    many codes left and when one was last used; a set is issued from the Authenticators
    (or manage.py mfa_recovery_codes), and may be removed."""
    from django_otp.plugins.otp_static.models import StaticDevice

    class RecoveryCodesAdmin(admin.ModelAdmin):
        list_display = ["user", "codes_left", "created_at", "last_used_at", "throttling_failure_count"]
        list_select_related = ["user"]
        search_fields = ["user__username"]
        actions = ["delete_selected"]

        def get_queryset(self, request):
            # codes left counted in the list's query, not one query per row
            return super().get_queryset(request).annotate(n_codes=Count("token_set"))

        @admin.display(description=gettext_lazy("codes left"), ordering="n_codes")
        def codes_left(self, device):
            return device.n_codes

        def has_add_permission(self, request, obj=None) -> bool:
            return False

        def has_change_permission(self, request, obj=None) -> bool:
            return False

    if admin.site.is_registered(StaticDevice):
        admin.site.unregister(StaticDevice)
    admin.site.register(StaticDevice, RecoveryCodesAdmin)


_recovery_codes_admin()
