"""Every stream head is sealed by the application's key (audit/seals.py): the new column,
and the seal of every existing head, computed here with the key in force. Heads written
later are sealed as they move (audit.services)."""

from django.db import migrations, models


def seal_heads(apps, schema_editor):
    from audit.seals import head_seal

    AuditStream = apps.get_model("audit", "AuditStream")
    rows = AuditStream.objects.using(schema_editor.connection.alias).order_by("id")
    batch = []
    for head in rows.only("id", "name", "seq", "head_hash").iterator(chunk_size=2000):
        head.head_seal = head_seal(head.name, head.seq, head.head_hash)
        batch.append(head)
        if len(batch) == 2000:
            AuditStream.objects.using(schema_editor.connection.alias).bulk_update(batch, ["head_seal"])
            batch = []
    if batch:
        AuditStream.objects.using(schema_editor.connection.alias).bulk_update(batch, ["head_seal"])


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0007_no_truncate_heads_forward"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditstream",
            name="head_seal",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.RunPython(seal_heads, migrations.RunPython.noop, elidable=False),
    ]
