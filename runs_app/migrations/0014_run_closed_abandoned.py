# A run idle past HARNESS_RUN_IDLE_S is closed as abandoned; a closed run is no longer joined by its conversation.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs_app", "0013_model_prices"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="closed",
            field=models.BooleanField(
                default=False,
                help_text="It reached its end, or no request came for a while: its conversation starts anew.",
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[
                    ("running", "Running"),
                    ("passed", "Passed"),
                    ("failed", "Failed"),
                    ("errored", "Errored"),
                    ("skipped", "Skipped"),
                    ("abandoned", "Abandoned"),
                ],
                db_index=True,
                default="running",
                max_length=10,
            ),
        ),
    ]
