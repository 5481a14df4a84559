"""Pages of runs_app (login required)."""

from django.urls import path

from runs_app import views

app_name = "runs"
urlpatterns: list = [
    path("coverage/", views.coverage, name="coverage"),
    # path: a provider name is free text in the admin, and the obligation is always the last segment.
    path("coverage/<path:provider>/<str:obligation>/", views.coverage_cell, name="coverage_cell"),
    path("runs/", views.runs_list, name="list"),
    path("runs/<uuid:run_id>/", views.run_detail, name="detail"),
]
