"""An index on an event's action (and id, newest first), for the events list filtered by
`action` or `action_prefix` (audit.filters.AuditEventFilter). Building it holds writes to the
events for as long as it takes (a few seconds per million events): migrate with the floor
closed, as every release does."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0009_anchored_heads'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='auditevent',
            index=models.Index(fields=['action', 'id'], name='audit_event_action_idx', opclasses=['varchar_pattern_ops', 'int8_ops']),
        ),
    ]
