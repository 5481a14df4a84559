import uuid

from django.db import models


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"
        ERRORED = "errored"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Not a foreign key: a run outlives the scenario it played, and lorem/instruction runs have none.
    scenario_id = models.CharField(max_length=100, blank=True, default="", db_index=True)
    mode = models.CharField(max_length=20, default="scenario")  # scenario | instruction | lorem
    protocol = models.CharField(max_length=20, db_index=True)  # openai | anthropic
    source = models.CharField(max_length=20, default="endpoint", db_index=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING, db_index=True)
    status_reason = models.TextField(blank=True, default="")
    conversation_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    turns_served = models.JSONField(default=list)
    started_at = models.DateTimeField(db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.scenario_id or self.mode} {self.id}"


class RunEvent(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    timestamp = models.DateTimeField()
    kind = models.CharField(max_length=40)
    turn = models.PositiveIntegerField(null=True, blank=True)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.kind}"


class AttemptCounter(models.Model):
    """Simulated failures served per (run, turn, protocol): the one write a request may wait on."""

    run_id = models.UUIDField()
    turn = models.PositiveIntegerField()
    protocol = models.CharField(max_length=20)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run_id", "turn", "protocol"], name="attempt_counter_unique_key")
        ]
