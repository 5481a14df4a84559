"""What a CI job uploads beside its run's events: its conversation (``RunMessage``, normalised by
``runs_app/ci/messages.py``) and the pages it generated (``Artifact``); imported at the end of ``runs_app/models.py``,
which registers them."""

from __future__ import annotations

from django.db import models


class RunMessage(models.Model):
    """One message of a run's uploaded conversation at its position; the same position uploaded again with the same
    message is the stored one (a retry), never a second row."""

    run = models.ForeignKey("runs_app.Run", on_delete=models.CASCADE, related_name="messages")
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=20)  # system, user, assistant, tool
    # [{"type": "text" | "tool_call" | "tool_result" | "reasoning" | "image" | "other", ...}]: see ci/messages.py
    parts = models.JSONField(default=list)
    name = models.CharField(max_length=200, blank=True)
    format = models.CharField(max_length=20)  # the shape it came in: openai, anthropic
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "runs_app"
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "position"], name="runmessage_unique_position")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.position} {self.role}"


class Artifact(models.Model):
    """A named artifact of a run (seed 001's generated pages: a short URL and its HTML, or any text). Shown on the
    run page as text, or as HTML inside a sandboxed frame only; one per name and run, the latest upload wins."""

    class Kind(models.TextChoices):
        HTML = "html"
        TEXT = "text"

    run = models.ForeignKey("runs_app.Run", on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=500)
    content = models.TextField()
    kind = models.CharField(max_length=4, choices=Kind.choices)
    size = models.PositiveIntegerField(help_text="Bytes of content, in UTF-8")
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "runs_app"
        ordering = ["run", "name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="artifact_unique_name")]

    def __str__(self) -> str:
        return self.name
