"""The judge's rows: saved criteria sets, and batches ("judge these runs") with their progress.

Defined here and imported by :mod:`runs_app.models` (which registers them in runs_app), so that module stays one
room. The progress of a batch is a row, not process memory: any worker can show it and a reload keeps it.
"""

from __future__ import annotations

from django.db import models


class CriteriaSet(models.Model):
    """Plain-English criteria saved under a name, one per line, to judge runs with again."""

    name = models.CharField(max_length=100, unique=True)
    criteria = models.TextField(help_text="One criterion per line.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "runs_app"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class JudgeBatch(models.Model):
    """Runs judged together in the background against the same criteria: ``done`` of ``total`` so far. A judge job
    of the REST API is a batch of one run: its state is queued, running (``started_at``) or done (``finished_at``)."""

    criteria = models.TextField()
    criteria_set = models.ForeignKey(CriteriaSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    run_ids = models.JSONField(default=list)
    verdict_ids = models.JSONField(default=list)  # in the order the runs were judged
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    started_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # A job queued over the REST API (POST /api/runs/{id}/judge) names the token that queued it.
    api_token = models.ForeignKey(
        "runs_app.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # when its thread began: queued before, running after
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "runs_app"
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "judge batches"

    def __str__(self) -> str:
        return f"judge batch {self.pk}: {self.done} of {self.total}"
