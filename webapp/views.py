"""The one view of the web app: a page shell, named by its template, under a strict
Content-Security-Policy. Nothing here reads the database: what a page shows, the page's
module fetches from the API with the person's own credential. The shell carries only
what the deployment's configuration says and the API does not (which identity providers
and which payment methods are set up)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from core.asgi_limits import body_unread

PROVIDER_LABELS = {"google": "Google", "apple": "Apple"}


def identity_providers() -> list[dict[str, str]]:
    """The external identity providers a person can sign in with from the browser: those
    configured with client ids and an authorization address (settings.OIDC_PROVIDERS)."""
    offered = []
    for name, config in settings.OIDC_PROVIDERS.items():
        client_ids = config.get("client_ids") or []
        authorize_url = str(config.get("authorize_url") or "")
        if isinstance(client_ids, list) and client_ids and authorize_url:
            offered.append(
                {
                    "name": name,
                    "label": PROVIDER_LABELS.get(name, name.replace("_", " ").title()),
                    "authorizeUrl": authorize_url,
                    "clientId": str(client_ids[0]),
                }
            )
    return offered


def payment_methods() -> dict[str, bool]:
    """Which top-up methods this deployment takes: card (Stripe), crypto (BTCPay), and
    manual credit on a development deployment only."""
    return {
        "card": bool(settings.STRIPE_SECRET_KEY),
        "crypto": bool(settings.BTCPAY_URL and settings.BTCPAY_API_KEY and settings.BTCPAY_STORE_ID),
        "manual": bool(settings.DEVELOPMENT_DEPLOYMENT),
    }


def shell_render(
    request: HttpRequest, *, template: str, route: dict[str, object] | None = None, status: int = 200
) -> HttpResponse:
    """Renders `webapp/<template>` with this response's CSP nonce and the route's own
    values (a book's id, a page number, a top-up reference), which the template hands to
    its module as JSON (`<script id="route" type="application/json">`)."""
    nonce = secrets.token_urlsafe(16)
    context = {
        "nonce": nonce,
        "development": settings.DEVELOPMENT_DEPLOYMENT,
        "route": route or {},
        "providers": identity_providers(),
        "payments": payment_methods(),
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


@body_unread
@require_safe
def page(request: HttpRequest, template: str, **route: object) -> HttpResponse:
    """A page of the app: its shell, whatever the route."""
    return shell_render(request, template=template, route=route)


@body_unread
@csrf_exempt  # it changes nothing: a POST to no address is told 404, not a CSRF failure
def not_found(request: HttpRequest, unknown: str = "") -> HttpResponse:
    """Any other address outside /v1, whatever the method: the app's own 404 page (with
    DEBUG on too)."""
    return shell_render(request, template="not_found.html", status=404)
