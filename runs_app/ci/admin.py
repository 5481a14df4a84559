"""A run's uploaded conversation and artifacts in the Run admin, read-only: the messages by position, and each
artifact with the address of its isolated content (never its markup in the admin's own page)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs_app.adminkit import ReadOnlyInline, json_block
from runs_app.models import Artifact, RunMessage


class RunMessageInline(ReadOnlyInline):
    model = RunMessage
    fields = ("position", "role", "format", "parts_json")
    readonly_fields = fields
    classes = ("collapse",)
    verbose_name = "uploaded message"

    @admin.display(description="parts")
    def parts_json(self, obj: RunMessage) -> SafeString:
        return json_block(obj.parts)


class ArtifactInline(ReadOnlyInline):
    model = Artifact
    fields = ("name", "kind", "size", "content_link", "updated_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Artifact]:
        return super().get_queryset(request).defer("content")

    @admin.display(description="content")
    def content_link(self, obj: Artifact) -> SafeString:
        url = reverse("runs:artifact_raw", args=[obj.pk])
        return format_html('<a href="{}" target="_blank" rel="noopener noreferrer">open (sandboxed)</a>', url)
