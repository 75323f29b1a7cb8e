"""The status page at `/`: one HTML page whose inline script signs in, lists the caller's
books with live progress from the hub (/v1/hub), uploads a book, tops up on development
deployments and downloads exports, all through the public API. It doubles as the example
hub client of docs/hub.md."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe


@require_safe
def status_page(request: HttpRequest) -> HttpResponse:
    nonce = secrets.token_urlsafe(16)
    response = render(
        request,
        "core/status_page.html",
        {"nonce": nonce, "development": settings.DEVELOPMENT_DEPLOYMENT, "languages": settings.TARGET_LANGUAGES},
    )
    host = request.get_host()
    # Only this response's own script and style run: data the page shows can never become
    # code, even if an escape were missed. https: lets a download follow a storage redirect.
    response["Content-Security-Policy"] = (
        f"default-src 'self'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        f"connect-src 'self' ws://{host} wss://{host} https:; img-src 'self' data: blob:; object-src 'none'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    response["Cache-Control"] = "no-store"
    return response
