"""ASGI entry point for daphne and uvicorn alike."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "harnessweb.settings")
# Build Django's app (and load the apps) before importing anything that touches models.
django_asgi_app = get_asgi_application()

from harnessweb.routing import build_application  # noqa: E402

application = build_application(django_asgi_app)
