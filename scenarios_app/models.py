"""Stored scenarios and their saved versions; the catalog's fingerprint."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Count, Max, Sum
from django.urls import reverse

from harnessweb.engine import schemas

# Ids that name the scenario list's own pages: such a scenario's editor is reached at <id>/edit/ instead.
RESERVED_IDS = frozenset({"new", "import", "editor"})


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

    def get_absolute_url(self) -> str:
        """The scenario's editor (``<id>/edit/`` for ids that name one of the list's own pages)."""
        if self.id in RESERVED_IDS:
            return reverse("scenarios:edit_alt", args=[self.id])
        return reverse("scenarios:edit", args=[self.id])

    def to_schema(self) -> schemas.Scenario:
        return schemas.Scenario.model_validate(self.data)

    @classmethod
    def upsert(cls, scenario: schemas.Scenario, *, user: Any = None, note: str = "") -> tuple[Scenario, str]:
        """Store a validated scenario; returns the row and "created", "updated" or "unchanged" (left untouched).

        A created or changed row gets a new :class:`ScenarioVersion` (by ``user``, with ``note``) in the same
        transaction, so every path that writes through here keeps the history; an unchanged one gets none.
        """
        data = scenario.canonical()
        with transaction.atomic():
            row = cls.objects.select_for_update().filter(id=scenario.id).first()
            if row is None:
                # Another request may create the same id meanwhile: the unique key lets one insert win, and the
                # loser goes on as an update of that row.
                defaults = {"description": scenario.description, "data": data}
                row, created = cls.objects.get_or_create(id=scenario.id, defaults=defaults)
                if created:
                    ScenarioVersion.record(row, None, user=user, note=note)
                    return row, "created"
                row = cls.objects.select_for_update().get(id=scenario.id)
            if row.data == data:
                return row, "unchanged"
            previous = row.data
            row.data = data
            row.save()
            ScenarioVersion.record(row, previous, user=user, note=note)
            return row, "updated"


class ScenarioVersion(models.Model):
    """One saved state of a scenario: version N is the data as the N-th recorded save left it (the newest is
    the current data)."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    data = models.JSONField()
    saved_at = models.DateTimeField(auto_now_add=True)
    saved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["scenario", "-number"]
        constraints = [models.UniqueConstraint(fields=["scenario", "number"], name="scenario_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.scenario_id} v{self.number}"

    @classmethod
    def record(cls, row: Scenario, previous: dict[str, Any] | None, *, user: Any = None, note: str = "") -> None:
        """Record ``row.data`` as the next version; called inside the transaction that wrote the row.

        Writes that bypass :meth:`Scenario.upsert` (the admin saves the row itself) leave the newest version behind
        the data they replaced; that data (``previous``) is recorded first, so no state that was live is lost.
        """
        latest = cls.objects.filter(scenario=row).order_by("-number").first()
        number = latest.number if latest else 0
        if previous is not None and (latest is None or latest.data != previous):
            number += 1
            cls.objects.create(scenario=row, number=number, data=previous, note="saved without a recorded version")
        if user is not None and not getattr(user, "is_authenticated", False):
            user = None  # an AnonymousUser cannot be stored
        cls.objects.create(scenario=row, number=number + 1, data=row.data, saved_by=user, note=note[:200])


def catalog_stamp() -> tuple[int, str, int]:
    """A cheap fingerprint of the whole catalog: it changes on every create, update and delete, from any process.

    The revision sum catches an update whose timestamp is not the newest (another host's clock behind).
    """
    row = Scenario.objects.aggregate(n=Count("id"), latest=Max("updated_at"), revisions=Sum("revision"))
    return row["n"], row["latest"].isoformat() if row["latest"] else "", row["revisions"] or 0
