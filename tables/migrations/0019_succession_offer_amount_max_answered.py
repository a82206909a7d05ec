"""An answered offer keeps the maximum it was answered under (help text only: no schema change).

An offer with no bound of its own (a new bank; domestic at the height) is laid out with
amount_max NULL, the table maximum in force binding it; once answered (or skipped by an
answer, a departure or the asta's opening) it records the ceiling that applied, as it records
the minimum (tables.services.succession._in_force). Rows answered before keep NULL: their
events do not say the maximum, and the report's verification holds the rows to the events."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tables", "0018_cash_count_net_of_register"),
    ]

    operations = [
        migrations.AlterField(
            model_name="successionoffer",
            name="amount_max",
            field=models.PositiveBigIntegerField(
                blank=True,
                help_text="None: no bound of its own (the table maximum binds it); answered, the maximum it was "
                "answered under (None: no maximum).",
                null=True,
            ),
        ),
    ]
