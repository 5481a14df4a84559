"""The Files and Batch APIs' rows: files uploaded (a batch's input) or written (its output and errors), and batches
(OpenAI's and Anthropic's), whose state is computed from their clock (``harnessweb/engine/batches.py``), never
stored. Imported at the end of ``runs_app/models.py``, which registers them."""

from __future__ import annotations

from django.db import models


class StoredFile(models.Model):
    """A file of OpenAI's Files API, its bytes in the database (uploads are bounded by ``HARNESS_MAX_BODY_BYTES``)."""

    id = models.CharField(primary_key=True, max_length=40)
    purpose = models.CharField(max_length=30, db_index=True)
    filename = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()
    created_at = models.DateTimeField(db_index=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "runs_app"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.id} {self.filename}"


class Batch(models.Model):
    """A batch of requests: OpenAI's (``provider`` openai: lines of an input file for one endpoint) or Anthropic's
    Message Batch. ``lines`` are its requests as read at create; ``answers`` what each got once the batch reached
    ``in_progress`` on a read (None before), claimed by one reader (``claimed_at``)."""

    id = models.CharField(primary_key=True, max_length=40)
    provider = models.CharField(max_length=20, db_index=True)  # openai | anthropic
    endpoint = models.CharField(max_length=40)
    input_file_id = models.CharField(max_length=40, blank=True)
    completion_window = models.CharField(max_length=10, default="24h")
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(db_index=True)
    step_s = models.FloatField(help_text="Seconds between its states.")
    ending = models.CharField(max_length=10, default="completed")  # completed | failed | expired
    ending_message = models.TextField(blank=True)
    answered_before_expiry = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)  # why its input was refused, OpenAI's errors.data
    lines = models.JSONField(default=list)
    # What its lines are played with: the create request's headers (redacted), its key's place and fingerprint (the
    # key itself is never stored) and the run it named.
    context = models.JSONField(default=dict)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    answers = models.JSONField(null=True, blank=True)
    output_file_id = models.CharField(max_length=40, blank=True)
    error_file_id = models.CharField(max_length=40, blank=True)

    class Meta:
        app_label = "runs_app"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.id
