from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from harnessweb import views
from harnessweb.api import api
from runs_app.admin_coverage import coverage_admin_view

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login/link/<str:uidb64>/<str:token>/", views.login_link, name="login_link"),
    # Before admin.site.urls, whose catch-all would answer 404 for it.
    path("admin/coverage/", coverage_admin_view, name="admin_coverage"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("scenarios/", include("scenarios_app.urls")),
    path("", include("runs_app.urls")),
]
