"""Pages of runs_app (login required): the runs list, a run's page, judging runs, the coverage grid and its
evidence."""

from django.urls import path

from runs_app import retention
from runs_app.coverage import views as coverage_views
from runs_app.judging import views as judging_views
from runs_app.live import views

app_name = "runs"
urlpatterns: list = [
    path("coverage/", coverage_views.coverage, name="coverage"),
    # path: a provider name is free text in the admin, and the obligation is always the last segment.
    path("coverage/<path:provider>/<str:obligation>/", coverage_views.coverage_cell, name="coverage_cell"),
    path("runs/", views.runs_list, name="list"),
    path("runs/<uuid:run_id>/", views.run_detail, name="detail"),
    path("runs/<uuid:run_id>/cassette.json", views.run_cassette, name="cassette"),
    path("runs/<uuid:run_id>/pin/", retention.pin_run, name="pin"),
    path("runs/<uuid:run_id>/actions/", views.run_actions, name="actions"),
    path("runs/<uuid:run_id>/compare/", views.run_compare, name="compare"),
    path("runs/<uuid:run_id>/diff/<uuid:other_id>/", views.run_diff, name="diff"),
    path("runs/judge/", judging_views.judge_runs, name="judge"),
    # Outside /runs/: an artifact's content, which the run page shows only inside a sandboxed frame.
    path("artifacts/<int:artifact_id>/raw", views.artifact_raw, name="artifact_raw"),
    path("runs/judge/<int:batch_id>/", judging_views.judge_batch, name="judge_batch"),
]
