import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs_app", "0010_run_messages_artifacts")]

    operations = [
        migrations.AddField(
            model_name="judgebatch",
            name="api_token",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="runs_app.apitoken",
            ),
        ),
        migrations.AddField(
            model_name="judgebatch",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="judgeverdict",
            name="input_tokens",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="judgeverdict",
            name="output_tokens",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="judgeverdict",
            name="prompt",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="judgeverdict",
            name="skipped_reason",
            field=models.TextField(
                blank=True,
                help_text="Set when the judge was not asked (no key, a placeholder one): neither FAIL nor an error.",
            ),
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "Read"), ("write", "Write"), ("judge", "Judge")], default="read", max_length=5
            ),
        ),
    ]
