"""The two authentication classes. The server inspects the credential and picks the
handler: an `svc_sk_` secret (in X-Api-Key or Authorization: Bearer) is an API key,
anything else in Authorization: Bearer is a JWT."""

from __future__ import annotations

from typing import Any, cast

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import ExpiredTokenError, TokenError
from rest_framework_simplejwt.tokens import AccessToken

from accounts.errors import (
    AccountDisabled,
    CredentialMalformed,
    CredentialRejected,
    TokenExpired,
    TokenInvalid,
    TokenRevoked,
)
from accounts.models import ApiKey, User
from accounts.services.api_keys import api_key_authenticate, looks_like_api_key

AUTH_HEADER_CHALLENGE = 'Bearer realm="api"'


def authentication_failed(rejected: CredentialRejected) -> exceptions.AuthenticationFailed:
    """The rejection as DRF's AuthenticationFailed (which DRF answers with the
    WWW-Authenticate challenge), its problem code as the detail's code."""
    return exceptions.AuthenticationFailed(rejected.detail, code=rejected.code)


def request_user(request: Request) -> User:
    """The signed-in account of a request that passed authentication."""
    return cast(User, request.user)


def bearer_credential(request: Request) -> str | None:
    """The value after `Bearer ` in the Authorization header, if any."""
    header = get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"bearer":
        return None
    try:
        return header[1].decode()
    except UnicodeDecodeError:
        raise authentication_failed(CredentialMalformed(_("The credential is malformed."))) from None


class ApiKeyAuthentication(BaseAuthentication):
    """An API key in X-Api-Key, or in Authorization: Bearer. request.auth is the ApiKey."""

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        secret = request.headers.get("X-Api-Key")
        if secret is None:
            bearer = bearer_credential(request)
            if bearer is None or not looks_like_api_key(bearer):
                return None
            secret = bearer
        try:
            key = api_key_authenticate(secret=secret.strip())
        except CredentialRejected as rejected:
            raise authentication_failed(rejected) from None
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        return AUTH_HEADER_CHALLENGE


class JwtAuthentication(JWTAuthentication):
    """An interactive JWT in Authorization: Bearer. Carries every right of its account."""

    def authenticate(self, request: Request) -> tuple[User, AccessToken] | None:  # type: ignore[override]
        raw = bearer_credential(request)
        if raw is None or looks_like_api_key(raw):
            return None
        token = self._validated(raw)
        return self.get_user(token), token

    def _validated(self, raw: str) -> AccessToken:
        try:
            return AccessToken(raw)  # type: ignore[arg-type]
        except ExpiredTokenError:
            raise authentication_failed(TokenExpired(_("The token has expired."))) from None
        except TokenError:
            if raw.count(".") != 2:
                raise authentication_failed(
                    CredentialMalformed(_("The credential is neither an API key nor a JWT."))
                ) from None
            raise authentication_failed(TokenInvalid(_("The token is invalid."))) from None

    _USER_FAILURES: dict[str, tuple[type[CredentialRejected], str]] = {
        "password_changed": (TokenRevoked, "The password changed since this token was issued."),
        "user_inactive": (AccountDisabled, "The account is disabled."),
    }

    def get_user(self, validated_token: Any) -> User:  # type: ignore[override]
        try:
            return super().get_user(validated_token)  # type: ignore[return-value]
        except exceptions.AuthenticationFailed as failed:
            # simplejwt's own AuthenticationFailed carries its reason as detail["code"].
            detail = failed.detail
            reason = str(detail.get("code", "")) if isinstance(detail, dict) else str(failed.get_codes())
            rejection, message = self._USER_FAILURES.get(reason, (TokenInvalid, "The token is invalid."))
            raise authentication_failed(rejection(_(message))) from None

    def authenticate_header(self, request: Request) -> str:
        return AUTH_HEADER_CHALLENGE
