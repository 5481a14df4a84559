from django.db import migrations, models

from harnessweb.engine.trace_outcome import outcome_of


def read_footers(apps, schema_editor):
    """The logs stored before: their outcome from their footer, as an upload without one gets it."""
    TraceLog = apps.get_model("runs_app", "TraceLog")
    changed = []
    for log in TraceLog.objects.only("id", "content").iterator(chunk_size=500):
        log.outcome = outcome_of(log.content)
        if log.outcome:
            changed.append(log)
        if len(changed) >= 500:
            TraceLog.objects.bulk_update(changed, ["outcome"])
            changed = []
    TraceLog.objects.bulk_update(changed, ["outcome"])


class Migration(migrations.Migration):
    dependencies = [("runs_app", "0011_judge_jobs")]

    operations = [
        migrations.AddField(
            model_name="tracelog",
            name="outcome",
            field=models.CharField(
                blank=True, choices=[("success", "Success"), ("failed", "Failed")], default="", max_length=7
            ),
        ),
        migrations.RunPython(read_footers, migrations.RunPython.noop),
    ]
