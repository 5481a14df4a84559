"""A run's id is a UUID version 7 (time first: the runs made together are neighbours in the primary key's index), and
the event table loses its index on run alone, which its (run, seq) constraint's index already serves: two index
pages fewer in the database's log for each batch of events written. Neither rebuilds a table: the id's default is
state only, the index is dropped by its name (the same on SQLite and PostgreSQL)."""

import django.db.models.deletion
from django.db import migrations, models

import uuid_utils.compat


class Migration(migrations.Migration):
    dependencies = [
        ("runs_app", "0017_run_fewer_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="id",
                    field=models.UUIDField(
                        default=uuid_utils.compat.uuid7, editable=False, primary_key=True, serialize=False
                    ),
                ),
                migrations.AlterField(
                    model_name="runevent",
                    name="run",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="runs_app.run",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "runs_app_runevent_run_id_caf2a2b7"',
                    reverse_sql='CREATE INDEX "runs_app_runevent_run_id_caf2a2b7" ON "runs_app_runevent" ("run_id")',
                ),
            ],
        ),
    ]
