"""API tokens stored as digests (floor.models.ApiToken). DRF's authtoken table, where a
database created before this migration keeps its tokens in clear, is read once: each token
is moved over as its digest (the tablets logged in stay logged in) and the clear keys are
deleted. The app is no longer installed; its emptied table may be dropped at leisure."""

import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


OLD_TABLE = "authtoken_token"


def tokens_to_digests(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("floor", "ApiToken")
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, {quote('user_id')}, {quote('created')} FROM {quote(OLD_TABLE)}")  # noqa: S608
        rows = cursor.fetchall()
        ApiToken.objects.bulk_create(
            ApiToken(digest=hashlib.sha256(key.encode()).hexdigest(), user_id=user_id, created=created)
            for key, user_id, created in rows
        )
        cursor.execute(f"DELETE FROM {quote(OLD_TABLE)}")  # noqa: S608


class Migration(migrations.Migration):

    dependencies = [
        ('floor', '0006_staff_change'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('digest', models.CharField(help_text='SHA-256 hex of the key.', max_length=64, unique=True)),
                ('created', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'indexes': [models.Index(fields=['user', 'created'], name='floor_apitoken_user_created')],
            },
        ),
        migrations.RunPython(tokens_to_digests, migrations.RunPython.noop),
    ]
