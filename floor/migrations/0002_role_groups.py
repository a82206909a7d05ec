"""The five staff roles as auth groups (floor/roles.py), and the Direzione's read access to
the floor in the admin (the back office; writes go through the services and their audit).

The role names are copied here, not imported: a migration must not change when the code does."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = ("commissario", "capo_partita", "changeur", "auditor", "direzione")
FLOOR_MODELS = ("casino", "site", "table", "gamingday", "tablesession", "sessioninterruption",
                "minimumchange", "patron", "seat")


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    # Permissions are normally created after all migrations ran; create the floor's now.
    floor_config = apps.get_app_config("floor")
    floor_config.models_module = True
    create_permissions(floor_config, apps=apps, verbosity=0)
    floor_config.models_module = None
    for name in ROLES:
        Group.objects.get_or_create(name=name)
    direzione = Group.objects.get(name="direzione")
    view = Permission.objects.filter(
        content_type__app_label="floor", codename__in=[f"view_{m}" for m in FLOOR_MODELS]
    )
    direzione.permissions.add(*view)


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("floor", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
