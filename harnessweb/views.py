"""Project-level pages: the one-time log-in link that ``make run`` prints (the home page is the overview, in
``runs_app/overview/``)."""

from django.contrib.auth import get_user_model, login
from django.contrib.auth.tokens import default_token_generator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.http import require_GET


@require_GET
def login_link(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """Log in with a link printed on the console. Django's token generator binds the token to the user's last
    log-in, so the link stops working as soon as it has been used."""
    user_model = get_user_model()
    try:
        user = user_model.objects.get(pk=force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError, user_model.DoesNotExist):
        user = None
    if user is None or not user.is_active or not default_token_generator.check_token(user, token):
        return render(request, "registration/link_invalid.html", status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return HttpResponseRedirect("/")
