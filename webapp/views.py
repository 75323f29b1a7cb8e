"""The one view of the web app: a page shell, named by its template, under a strict
Content-Security-Policy. Nothing here reads the database: what a page shows, the page's
module fetches from the API with the person's own credential."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe


def shell_render(
    request: HttpRequest, *, template: str, route: dict[str, object] | None = None, status: int = 200
) -> HttpResponse:
    """Renders `webapp/<template>` with this response's CSP nonce and the route's own
    values (a book's id, a page number, a top-up reference), which the template hands to
    its module as data attributes."""
    nonce = secrets.token_urlsafe(16)
    context = {
        "nonce": nonce,
        "development": settings.DEVELOPMENT_DEPLOYMENT,
        "route": route or {},
    }
    response = render(request, f"webapp/{template}", context, status=status)
    host = request.get_host()
    # Only the app's own modules (and a script carrying this response's nonce) run, so data
    # a page shows can never become code, even if an escape were missed. connect-src lets
    # the hub's websocket through, and https: a download that follows a storage redirect.
    response["Content-Security-Policy"] = (
        f"default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self'; "
        f"connect-src 'self' ws://{host} wss://{host} https:; img-src 'self' data: blob:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    response["Cache-Control"] = "no-store"
    return response


@require_safe
def page(request: HttpRequest, template: str, **route: object) -> HttpResponse:
    """A page of the app: its shell, whatever the route."""
    return shell_render(request, template=template, route=route)


@require_safe
def not_found(request: HttpRequest, unknown: str = "") -> HttpResponse:
    """Any other address outside /v1: the app's own 404 page (with DEBUG on too)."""
    return shell_render(request, template="not_found.html", status=404)
