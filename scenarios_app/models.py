from __future__ import annotations

from typing import Any

from django.db import models, transaction
from django.db.models import Count, Max, Sum

from scenarios_app import schemas


class Scenario(models.Model):
    """A stored scenario; ``data`` is the canonical JSON of :class:`schemas.Scenario`, validated on every save."""

    id = models.CharField(primary_key=True, max_length=100)
    description = models.TextField(blank=True, default="")
    data = models.JSONField()
    # Bumped on every change; with the row count and the newest updated_at it fingerprints the catalog.
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Whatever path a scenario takes in (loader, admin, API), what is stored is valid and canonical.
        scenario = schemas.Scenario.model_validate(self.data)
        if scenario.id != self.id:
            raise ValueError(f"scenario data id {scenario.id!r} does not match the row id {self.id!r}")
        self.data = scenario.canonical()
        self.description = scenario.description
        if not self._state.adding:
            self.revision += 1
        super().save(*args, **kwargs)

    def to_schema(self) -> schemas.Scenario:
        return schemas.Scenario.model_validate(self.data)

    @classmethod
    def upsert(cls, scenario: schemas.Scenario) -> tuple[Scenario, str]:
        """Store a validated scenario; returns the row and "created", "updated" or "unchanged" (left untouched)."""
        data = scenario.canonical()
        with transaction.atomic():
            row = cls.objects.select_for_update().filter(id=scenario.id).first()
            if row is None:
                return cls.objects.create(id=scenario.id, description=scenario.description, data=data), "created"
            if row.data == data:
                return row, "unchanged"
            row.data = data
            row.save()
            return row, "updated"


def catalog_stamp() -> tuple[int, str, int]:
    """A cheap fingerprint of the whole catalog: it changes on every create, update and delete, from any process.

    The revision sum catches an update whose timestamp is not the newest (another host's clock behind).
    """
    row = Scenario.objects.aggregate(n=Count("id"), latest=Max("updated_at"), revisions=Sum("revision"))
    return row["n"], row["latest"].isoformat() if row["latest"] else "", row["revisions"] or 0
