"""Segregation of duties: who records the play, who handles the cash, who audits and who
supervises are different people. Only Commissario and Direzione may be held together; the
admin's form says so, and every other path (a shell, group.user_set.add) is refused too."""

from __future__ import annotations

import itertools
import re

import pytest
from django.contrib.auth.models import Group
from django.db import transaction
from django.test import Client

from floor.roles import ALL_ROLES, Role, role_conflict
from floor.security import RoleConflict

pytestmark = pytest.mark.django_db

ALLOWED_TOGETHER = {frozenset({Role.COMMISSARIO, Role.DIREZIONE})}


@pytest.mark.parametrize("pair", list(itertools.combinations(ALL_ROLES, 2)), ids=lambda p: "+".join(p))
def test_every_pair_of_roles(pair):
    conflict = role_conflict(pair)
    if frozenset(pair) in ALLOWED_TOGETHER:
        assert conflict is None
    else:
        assert conflict is not None and set(conflict) == set(pair)


def test_one_role_no_role_and_other_groups_never_conflict():
    assert role_conflict([]) is None
    for role in ALL_ROLES:
        assert role_conflict([role, "night shift"]) is None
    assert set(role_conflict(ALL_ROLES)) == set(ALL_ROLES)


def group(role):
    return Group.objects.get_or_create(name=str(role))[0]


def test_adding_a_conflicting_role_is_refused_by_any_path(make_user):
    capo = make_user("capo", Role.CAPO_PARTITA)
    newcomer = make_user("newcomer")
    auditor, changeur, capo_role = group(Role.AUDITOR), group(Role.CHANGEUR), group(Role.CAPO_PARTITA)
    # (each in its own savepoint, as a caller's transaction: the refusal rolls it back)
    with pytest.raises(RoleConflict, match="capo_partita, auditor"), transaction.atomic():
        capo.groups.add(auditor)
    with pytest.raises(RoleConflict), transaction.atomic():
        changeur.user_set.add(capo)
    with pytest.raises(RoleConflict), transaction.atomic():  # two at once, to a user with none
        newcomer.groups.add(capo_role, changeur)
    assert not newcomer.groups.exists()
    assert sorted(capo.groups.values_list("name", flat=True)) == ["capo_partita"]

    # A change of role: the old one goes first (what the admin's save does), then the new.
    capo.groups.set([group(Role.AUDITOR)])
    assert sorted(capo.groups.values_list("name", flat=True)) == ["auditor"]
    boss = make_user("boss", Role.COMMISSARIO)
    boss.groups.add(group(Role.DIREZIONE))
    assert sorted(boss.groups.values_list("name", flat=True)) == ["commissario", "direzione"]


@pytest.fixture
def admin_client(make_user):
    root = make_user("root", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(root)
    return client


def _change_form(client, user, roles, first_name=""):
    page = client.get(f"/admin/auth/user/{user.pk}/change/")
    assert page.status_code == 200
    data = {
        "username": user.username, "first_name": first_name, "last_name": "", "email": "",
        "is_active": "on", "date_joined_0": "2026-11-30", "date_joined_1": "10:00:00",
        "initial-date_joined_0": "2026-11-30", "initial-date_joined_1": "10:00:00",
        "groups": [group(role).pk for role in roles], "user_permissions": [],
    }  # fmt: skip
    return client.post(f"/admin/auth/user/{user.pk}/change/", data)


def test_the_admin_says_which_roles_conflict_and_saves_nothing(admin_client, make_user):
    capo = make_user("capo", Role.CAPO_PARTITA)
    refused = _change_form(admin_client, capo, [Role.CAPO_PARTITA, Role.CHANGEUR])
    assert refused.status_code == 200  # the form again, with its error
    html = refused.content.decode()
    assert re.search(r"One person may not hold these roles together: Capo Partita, changeur", html)
    assert list(capo.groups.values_list("name", flat=True)) == ["capo_partita"]

    saved = _change_form(admin_client, capo, [Role.COMMISSARIO, Role.DIREZIONE])
    assert saved.status_code == 302
    assert sorted(capo.groups.values_list("name", flat=True)) == ["commissario", "direzione"]


def test_conflicting_roles_written_past_the_guard_are_none_in_force(make_user, api_client_for):
    """Roles given before the guard existed, or written straight into the relation: the user
    acts with none of them (fail closed) until the back office fixes them."""
    from floor.roles import user_roles

    user = make_user("legacy", Role.CAPO_PARTITA)
    through = type(user).groups.through
    through.objects.create(user=user, group=group(Role.AUDITOR))  # (no signal: past the guard)
    fresh = type(user).objects.get(pk=user.pk)
    assert user_roles(fresh) == frozenset()
    assert api_client_for(fresh, token=True).get("/api/me/").status_code == 403


def test_a_superuser_does_not_also_record_handle_or_audit_the_play(make_user):
    from floor.roles import user_roles

    root = make_user("root", Role.DIREZIONE, is_superuser=True, is_staff=True)  # direzione: allowed
    assert user_roles(type(root).objects.get(pk=root.pk)) == frozenset({"direzione"})
    with pytest.raises(RoleConflict, match="superuser"), transaction.atomic():
        root.groups.add(group(Role.CAPO_PARTITA))
    capo = make_user("capo", Role.CAPO_PARTITA)
    type(capo).objects.filter(pk=capo.pk).update(is_superuser=True)  # (past the admin's form)
    assert user_roles(type(capo).objects.get(pk=capo.pk)) == frozenset()  # none in force


def test_the_admin_refuses_a_superuser_capo_partita(admin_client, make_user):
    capo = make_user("capo", Role.CAPO_PARTITA)
    page = admin_client.get(f"/admin/auth/user/{capo.pk}/change/")
    assert page.status_code == 200
    data = {
        "username": "capo", "first_name": "", "last_name": "", "email": "", "is_active": "on",
        "is_staff": "on", "is_superuser": "on", "date_joined_0": "2026-11-30", "date_joined_1": "10:00:00",
        "initial-date_joined_0": "2026-11-30", "initial-date_joined_1": "10:00:00",
        "groups": [group(Role.CAPO_PARTITA).pk], "user_permissions": [],
    }  # fmt: skip
    refused = admin_client.post(f"/admin/auth/user/{capo.pk}/change/", data)
    assert refused.status_code == 200 and "superuser, Capo Partita" in refused.content.decode()
    capo.refresh_from_db()
    assert not capo.is_superuser


def test_the_database_check_names_who_holds_conflicting_roles(make_user):
    from floor.checks import conflicting_roles

    assert conflicting_roles(databases=["default"]) == []
    user = make_user("legacy", Role.CAPO_PARTITA)
    type(user).groups.through.objects.create(user=user, group=group(Role.CHANGEUR))  # (past the guard)
    make_user("boss", Role.COMMISSARIO, Role.DIREZIONE)  # allowed together
    warnings = conflicting_roles(databases=["default"])
    assert [w.id for w in warnings] == ["floor.W001"]
    assert "legacy holds roles that may not go together: Capo Partita, changeur" in warnings[0].msg
    assert conflicting_roles(databases=None) == []  # (a plain `check` reads no database)


def test_the_database_check_says_when_casinos_share_their_staff():
    """One deployment runs one casino's floor; staff are not tied to a casino, so a second
    casino in the same database is named at migrate (floor.W002), not left to be found."""
    from floor.checks import casinos_share_their_staff
    from floor.models import Casino

    assert not Casino.objects.exists()
    Casino.objects.create(name="Venezia", code="venezia")
    assert casinos_share_their_staff(databases=["default"]) == []
    Casino.objects.create(name="Sanremo", code="sanremo")
    warnings = casinos_share_their_staff(databases=["default"])
    assert [w.id for w in warnings] == ["floor.W002"]
    assert "2 casinos" in warnings[0].msg and "sanremo" in warnings[0].msg
    for n in range(5):
        Casino.objects.create(name=f"Casino {n}", code=f"c{n}")
    assert "six or more casinos" in casinos_share_their_staff(databases=["default"])[0].msg
    assert casinos_share_their_staff(databases=None) == []  # (a plain `check` reads no database)


def test_a_role_given_by_someone_else_during_the_save_is_a_message_not_a_500(admin_client, make_user):
    """Two admins at once: the first gives the user Commissario after the second's form checked
    its roles, so the groups' guard refuses the second save. The second admin gets his form's
    page back with a message, nothing of his change is saved, the first admin's grant holds."""
    from django.db.models.signals import m2m_changed

    from floor import security

    user = make_user("newcomer")
    first_name = user.first_name
    user_model = type(user)
    through = user_model.groups.through

    def meanwhile(sender, instance, action, pk_set, reverse, **kwargs):
        if action == "pre_add" and not reverse and instance.pk == user.pk:
            through.objects.get_or_create(user_id=user.pk, group=group(Role.COMMISSARIO))  # the other admin

    m2m_changed.disconnect(dispatch_uid="chemin_roles_checked", sender=through)
    m2m_changed.connect(meanwhile, sender=through, dispatch_uid="test_meanwhile")
    m2m_changed.connect(security._roles_checked, sender=through, dispatch_uid="chemin_roles_checked")
    try:
        answer = _change_form(admin_client, user, [Role.CAPO_PARTITA], first_name="Renamed")
    finally:
        m2m_changed.disconnect(dispatch_uid="test_meanwhile", sender=through)
    assert answer.status_code == 302 and answer["Location"] == f"/admin/auth/user/{user.pk}/change/"
    page = admin_client.get(answer["Location"])
    assert "Nothing was saved: this user&#x27;s roles were changed by someone else" in page.content.decode()
    user.refresh_from_db()
    assert user.first_name == first_name  # the whole change rolled back
    assert list(user.groups.values_list("name", flat=True)) == []  # (the injected grant rolled back with it)
