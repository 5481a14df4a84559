"""The project's URLs: the overview (home), log-in, the admin, the REST API, the scenario pages and the runs pages;
the error pages (the dashboard's own, JSON under /api/)."""

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from harnessweb import views
from harnessweb.api import api
from runs_app.overview import views as overview_views

urlpatterns = [
    # The overview is the home page: the log-in (LOGIN_REDIRECT_URL) and the brand link land here.
    path("", overview_views.overview, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login/link/<str:uidb64>/<str:token>/", views.login_link, name="login_link"),
    # The grid lives in ProviderAdmin (admin:runs_app_coverage); this older, shorter address leads there. Before
    # admin.site.urls, whose catch-all would answer 404 for it.
    path(
        "admin/coverage/",
        staff_member_required(RedirectView.as_view(pattern_name="admin:runs_app_coverage")),
        name="admin_coverage",
    ),
    path("admin/", admin.site.urls),
    path("api/", views.json_errors(api.urls)),
    path("scenarios/", include("scenarios_app.urls")),
    path("", include("runs_app.urls")),
    # Browsers ask for /favicon.ico where a page names no icon (an API answer, a raw artifact).
    path("favicon.ico", RedirectView.as_view(url=static(views.FAVICON))),
    # Operations: an anonymous health check, and Prometheus metrics (off unless HARNESS_METRICS; a read token).
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
]

handler404 = views.page_not_found
handler403 = views.permission_denied
handler500 = views.server_error
