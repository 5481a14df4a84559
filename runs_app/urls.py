"""Pages of runs_app (login required): the runs list, a run's page, the coverage grid and its evidence."""

from django.urls import path

from runs_app.coverage import views as coverage_views
from runs_app.live import views

app_name = "runs"
urlpatterns: list = [
    path("coverage/", coverage_views.coverage, name="coverage"),
    # path: a provider name is free text in the admin, and the obligation is always the last segment.
    path("coverage/<path:provider>/<str:obligation>/", coverage_views.coverage_cell, name="coverage_cell"),
    path("runs/", views.runs_list, name="list"),
    path("runs/<uuid:run_id>/", views.run_detail, name="detail"),
]
