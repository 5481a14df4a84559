"""Pages of runs_app (login required)."""

from django.urls import path  # noqa: F401

app_name = "runs"
urlpatterns: list = []
