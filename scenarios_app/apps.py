"""The scenarios_app application: connects the catalog's invalidation to every scenario write."""

from django.apps import AppConfig


class ScenariosAppConfig(AppConfig):
    name = "scenarios_app"
    verbose_name = "Scenarios"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from scenarios_app.catalog import scenarios_changed
        from scenarios_app.models import Scenario

        post_save.connect(scenarios_changed, sender=Scenario, dispatch_uid="catalog-stamp-save")
        post_delete.connect(scenarios_changed, sender=Scenario, dispatch_uid="catalog-stamp-delete")
