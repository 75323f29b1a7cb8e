"""The two authentication classes. The server inspects the credential and picks the
handler: an `svc_sk_` secret (in X-Api-Key or Authorization: Bearer) is an API key,
anything else in Authorization: Bearer is a JWT."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import ExpiredTokenError, TokenError
from rest_framework_simplejwt.settings import api_settings as jwt_settings
from rest_framework_simplejwt.tokens import AccessToken
from rest_framework_simplejwt.utils import aware_utcnow, get_md5_hash_password

from accounts.errors import (
    AccountDisabled,
    CredentialMalformed,
    CredentialRejected,
    TokenExpired,
    TokenInvalid,
    TokenRevoked,
)
from accounts.models import ApiKey, User
from accounts.selectors import user_get_by_id
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


# Access tokens whose signature and claims were checked, by their text: an agent polls with
# the same token, and checking it again on every read was a third of the cost of an
# authenticated read that does nothing else (docs/performance.md, "The API under load").
# Only the token's own checks are kept: its expiry is checked again on every use and the
# account is read on every request, so a disabled account, a changed password or a
# deleted account refuse the token at once, as before.
VERIFIED_TOKENS = 1024


@lru_cache(maxsize=VERIFIED_TOKENS)
def _access_token_checked(raw: str) -> AccessToken:
    return AccessToken(raw)  # type: ignore[arg-type]


def access_token_verified(raw: str) -> AccessToken:
    """The access token `raw`, its signature checked once per process and its expiry on
    every call; simplejwt's TokenError (ExpiredTokenError once expired) when it fails."""
    token = _access_token_checked(raw)
    try:
        token.check_exp(current_time=aware_utcnow())
    except TokenError:
        return AccessToken(raw)  # type: ignore[arg-type]  # raises ExpiredTokenError, as on its first use
    return token


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
            return access_token_verified(raw)
        except ExpiredTokenError:
            raise authentication_failed(TokenExpired(_("The token has expired."))) from None
        except TokenError:
            if raw.count(".") != 2:
                raise authentication_failed(
                    CredentialMalformed(_("The credential is neither an API key nor a JWT."))
                ) from None
            raise authentication_failed(TokenInvalid(_("The token is invalid."))) from None

    def get_user(self, validated_token: Any) -> User:  # type: ignore[override]
        """The token's account, refused when it is gone, disabled, or its password changed
        since the token was issued (the token's `pwd` claim: a password change revokes
        every earlier token at once). simplejwt's checks, with the account read by
        `user_get_by_id`."""
        user_id = validated_token.get(jwt_settings.USER_ID_CLAIM)
        user = None if user_id is None else user_get_by_id(user_id=user_id)
        if user is None:
            raise authentication_failed(TokenInvalid(_("The token is invalid.")))
        if jwt_settings.CHECK_USER_IS_ACTIVE and not user.is_active:
            raise authentication_failed(AccountDisabled(_("The account is disabled.")))
        if jwt_settings.CHECK_REVOKE_TOKEN and validated_token.get(
            jwt_settings.REVOKE_TOKEN_CLAIM
        ) != get_md5_hash_password(user.password):
            raise authentication_failed(TokenRevoked(_("The password changed since this token was issued.")))
        return user

    def authenticate_header(self, request: Request) -> str:
        return AUTH_HEADER_CHALLENGE
