"""Scenario authoring pages (login required), mounted at /scenarios/.

The editor's own endpoints live under ``editor/`` and the fixed pages are single words; a scenario whose id is one
of those words (``new``, ``import``, ``editor``) is edited at ``<id>/edit/``.
"""

from django.urls import path

from scenarios_app import views
from scenarios_app.editor import views as editor

app_name = "scenarios"
urlpatterns = [
    path("", views.scenario_list, name="list"),
    path("new/", editor.editor_new, name="new"),
    path("import/", views.import_scenarios, name="import"),
    path("editor/validate/", editor.validate, name="validate"),
    path("editor/panel/", editor.switch_panel, name="panel"),
    path("editor/turns/", editor.edit_turns, name="turns"),
    path("editor/save/", editor.save, name="save"),
    path("editor/preview/", editor.preview, name="preview"),
    path("<str:scenario_id>/", editor.edit, name="edit"),
    path("<str:scenario_id>/edit/", editor.edit, name="edit_alt"),
    path("<str:scenario_id>/export/", views.export, name="export"),
    path("<str:scenario_id>/clone/", views.clone, name="clone"),
    path("<str:scenario_id>/delete/", views.delete, name="delete"),
    path("<str:scenario_id>/versions/<int:number>/diff/", views.version_diff, name="version_diff"),
    path("<str:scenario_id>/versions/<int:number>/restore/", views.version_restore, name="version_restore"),
]
