"""Who is on a hub connection: the API's own credential rules (accounts/authentication.py)
applied to a websocket handshake.

The credential comes as it does to the API, in `Authorization: Bearer <JWT or API key>` or
`X-Api-Key: <API key>`; a browser, which cannot set headers on a websocket, sends it in
the `access_token` query parameter instead (a header wins when both are present).
A refused connection is closed with 4401 (no credential, or one that is unknown, revoked,
expired or malformed; the close reason is the API's problem code) or 4403 (an API key
without a read scope, or a browser page on an origin the API does not allow).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from asgiref.typing import WebSocketScope
from django.conf import settings
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.request import Request

from accounts.authentication import ApiKeyAuthentication, JwtAuthentication
from accounts.models import ApiKey, User
from accounts.permissions import READ_SCOPES

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
ACCESS_TOKEN_PARAMETER = "access_token"  # noqa: S105  (a parameter name, not a secret)

AUTHENTICATORS = (ApiKeyAuthentication, JwtAuthentication)


class HubRefused(Exception):
    """The connection may not stay: close it with `close_code`, giving `reason` (a problem code)."""

    def __init__(self, close_code: int, reason: str) -> None:
        super().__init__(reason)
        self.close_code = close_code
        self.reason = reason


@dataclass(frozen=True)
class HubIdentity:
    user: User
    api_key: ApiKey | None  # None for a JWT
    expires_at: datetime | None  # when the credential stops being good, if it ever does


def hub_authenticate(scope: WebSocketScope) -> HubIdentity:
    """The account a websocket scope's credential belongs to, or HubRefused. Touches the
    database (call it through database_sync_to_async)."""
    request = _credential_request(scope)
    for authenticator_class in AUTHENTICATORS:
        try:
            result = authenticator_class().authenticate(request)
        except exceptions.AuthenticationFailed as failed:
            raise HubRefused(CLOSE_UNAUTHENTICATED, _problem_code(failed)) from None
        if result is None:
            continue
        user, credential = result
        if isinstance(credential, ApiKey):
            if not READ_SCOPES & set(credential.scopes):
                raise HubRefused(CLOSE_FORBIDDEN, "forbidden")
            return HubIdentity(user=user, api_key=credential, expires_at=credential.expires_at)
        return HubIdentity(user=user, api_key=None, expires_at=datetime.fromtimestamp(credential["exp"], tz=UTC))
    raise HubRefused(CLOSE_UNAUTHENTICATED, "not_authenticated")


def hub_origin_check(scope: WebSocketScope) -> None:
    """Raises HubRefused unless the handshake's page may use the hub: a program (which sends
    no Origin), a page of the service itself (its Origin names the host it connects to, or the public
    address), or
    a web app on one of CORS_ALLOWED_ORIGINS, the origins the API answers from a browser too."""
    origin = _header(scope, "origin")
    if origin is None:
        return
    netloc = urlsplit(origin).netloc
    if netloc in (_header(scope, "host"), urlsplit(settings.PUBLIC_BASE_URL).netloc):
        return
    if origin in settings.CORS_ALLOWED_ORIGINS:
        return
    raise HubRefused(CLOSE_FORBIDDEN, "origin_not_allowed")


def _header(scope: WebSocketScope, wanted: str) -> str | None:
    for raw_name, raw_value in scope.get("headers", []):
        if raw_name.decode("latin-1").lower() == wanted:
            return raw_value.decode("latin-1")
    return None


def _credential_request(scope: WebSocketScope) -> Request:
    """A request that carries the handshake's credential headers, for the API's authenticators."""
    meta: dict[str, Any] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        if name in ("AUTHORIZATION", "X_API_KEY"):
            meta[f"HTTP_{name}"] = raw_value.decode("latin-1")
    if not meta:
        tokens = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(ACCESS_TOKEN_PARAMETER)
        if tokens and tokens[0].strip():
            meta["HTTP_AUTHORIZATION"] = f"Bearer {tokens[0].strip()}"
    http_request = HttpRequest()
    http_request.META = meta
    return Request(http_request)


def _problem_code(failed: exceptions.AuthenticationFailed) -> str:
    codes = failed.get_codes()
    code = codes if isinstance(codes, str) else "authentication_failed"
    return code[:100]  # a close reason holds at most 123 bytes


_ACCESS_TOKEN_IN_TEXT = re.compile(rf"({ACCESS_TOKEN_PARAMETER}=)[^&\s\"]+")


def redacted(text: str) -> str:
    """The text with the value of any access_token parameter replaced."""
    return _ACCESS_TOKEN_IN_TEXT.sub(r"\1[redacted]", text)


class AccessTokenRedactingFilter(logging.Filter):
    """Keeps browsers' hub credentials out of the logs: uvicorn logs each websocket
    handshake's path with its query string (`"WebSocket /v1/hub?access_token=..."`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redacted(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redacted(arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


def access_tokens_redact_in(logger_names: Iterable[str]) -> None:
    """Adds the redacting filter to these loggers (once each)."""
    for name in logger_names:
        target = logging.getLogger(name)
        if not any(isinstance(existing, AccessTokenRedactingFilter) for existing in target.filters):
            target.addFilter(AccessTokenRedactingFilter())
