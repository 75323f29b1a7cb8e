"""HTTP endpoints of accounts: thin, each parses, calls one service or selector, renders."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework_simplejwt.tokens import AccessToken

from accounts import selectors
from accounts.api.serializers import (
    AccountDeleteInputSerializer,
    ApiKeyCreatedSerializer,
    ApiKeyCreateInputSerializer,
    ApiKeyListItemSerializer,
    LoginInputSerializer,
    PasswordChangeInputSerializer,
    PreferencesUpdateInputSerializer,
    ProfileSerializer,
    ProfileUpdateInputSerializer,
    RegisterInputSerializer,
    SessionSerializer,
)
from accounts.authentication import request_user
from accounts.models import ApiKey, User
from accounts.permissions import JwtOnly
from accounts.services import api_keys
from accounts.services import users as services
from core.openapi import problem_responses
from core.schema import reads_body
from core.serializers import validated
from core.throttling import ClientAddressRateThrottle

if TYPE_CHECKING:
    from rest_framework.permissions import _SupportsHasPermission


def session_response(user: User, *, status_code: int = status.HTTP_200_OK) -> Response:
    issued = services.token_issue(user=user)
    body = {"token": issued.token, "token_type": "Bearer", "expires_utc": issued.expires_at, "user": user}
    return Response(SessionSerializer(body).data, status=status_code)


class AnonymousView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list[type] = []
    throttle_classes = [ClientAddressRateThrottle]


class RegisterView(AnonymousView):
    throttle_scope = "register"

    @extend_schema(
        operation_id="register",
        tags=["auth"],
        auth=[],
        request=RegisterInputSerializer,
        responses={201: SessionSerializer, **problem_responses(400, 409, 429)},
        description="Create a password account and sign in. Passwords are checked for length, "
        "commonness, similarity to the email, and all-digits.",
    )
    def post(self, request: Request) -> Response:
        user = services.user_register(**validated(RegisterInputSerializer, request.data))
        return session_response(user, status_code=status.HTTP_201_CREATED)


class LoginView(AnonymousView):
    throttle_scope = "login"

    @extend_schema(
        operation_id="log_in",
        tags=["auth"],
        auth=[],
        request=LoginInputSerializer,
        responses={200: SessionSerializer, **problem_responses(400, 401, 429)},
    )
    def post(self, request: Request) -> Response:
        return session_response(services.user_authenticate(**validated(LoginInputSerializer, request.data)))


class MeView(APIView):
    @extend_schema(
        operation_id="get_me", tags=["account"], responses={200: ProfileSerializer, **problem_responses(401, 403)}
    )
    def get(self, request: Request) -> Response:
        return Response(ProfileSerializer(request.user).data)

    @extend_schema(
        operation_id="update_me",
        tags=["account"],
        request=ProfileUpdateInputSerializer,
        responses={200: ProfileSerializer, **problem_responses(400, 401, 403, 409)},
        description="Change the display name, or the email address (needs currentPassword and an "
        "interactive sign-in; `password_not_set` for an account without a password).",
    )
    def put(self, request: Request) -> Response:
        data = validated(ProfileUpdateInputSerializer, request.data)
        if data.get("email") is not None and isinstance(request.auth, ApiKey):
            raise PermissionDenied("Changing the email address needs an interactive sign-in (JWT).")
        user = services.profile_update(user=request_user(request), **data)
        return Response(ProfileSerializer(user).data)

    def get_permissions(self) -> Sequence[_SupportsHasPermission]:
        if self.request.method == "DELETE":  # never with an API key
            return [JwtOnly()]
        return super().get_permissions()

    @extend_schema(
        operation_id="delete_me",
        tags=["account"],
        request=AccountDeleteInputSerializer,
        responses={
            204: OpenApiResponse(description="Deleted: the account cannot sign in or be used again."),
            **problem_responses(400, 401, 403, 409),
        },
        description="Delete the account, with an interactive sign-in (JWT; an API key gets 403): every book "
        "with its files, batches in flight (their holds settled for finished pages, released for the rest), API "
        "keys, webhooks and hub connections (closed with 4410 account_deleted) end, and the JWT stops working. The "
        "wallet's ledger is kept, anonymised, as a financial record. Proof: `password` for a password account "
        "(400 when wrong or missing); an account without a password (an identity provider's) needs a JWT issued "
        "within ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES (403 recent_sign_in_required). 409 top_up_in_flight while "
        "a top-up is pending. See docs/api.md, Account deletion.",
    )
    @reads_body
    def delete(self, request: Request) -> Response:
        data = validated(AccountDeleteInputSerializer, request.data)
        token = request.auth
        signed_in_at = datetime.fromtimestamp(token["iat"], tz=UTC) if isinstance(token, AccessToken) else None
        services.account_delete(user=request_user(request), password=data.get("password"), signed_in_at=signed_in_at)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordView(APIView):
    permission_classes = [JwtOnly]
    throttle_classes = [ClientAddressRateThrottle]
    throttle_scope = "password"

    @extend_schema(
        operation_id="change_password",
        tags=["account"],
        request=PasswordChangeInputSerializer,
        responses={200: SessionSerializer, **problem_responses(400, 401, 403, 409, 429)},
        description="Change the password. Every token issued before stops working; the response carries a fresh one.",
    )
    def post(self, request: Request) -> Response:
        changes = validated(PasswordChangeInputSerializer, request.data)
        user = services.password_change(user=request_user(request), **changes)
        return session_response(user)


class PreferencesView(APIView):
    @extend_schema(
        operation_id="update_preferences",
        tags=["account"],
        request=PreferencesUpdateInputSerializer,
        responses={200: ProfileSerializer, **problem_responses(400, 401, 403)},
    )
    def put(self, request: Request) -> Response:
        changes = validated(PreferencesUpdateInputSerializer, request.data)
        user = services.preferences_update(user=request_user(request), **changes)
        return Response(ProfileSerializer(user).data)


class ApiKeyViewSet(viewsets.ViewSet):
    """Scoped API keys of the signed-in account."""

    lookup_value_regex = "[0-9a-fA-F-]{36}"

    @extend_schema(
        operation_id="create_api_key",
        tags=["api-keys"],
        request=ApiKeyCreateInputSerializer,
        responses={201: ApiKeyCreatedSerializer, **problem_responses(400, 401, 403)},
        description="Needs a JWT or a key with projects:write. A key cannot grant scopes it lacks (403 "
        "scope_not_held) nor create a key that outlives it (403 expiry_not_held: an expiring key must give "
        "expiresInDays within its own remaining whole days). The secret is in this response only.",
    )
    def create(self, request: Request) -> Response:
        data = validated(ApiKeyCreateInputSerializer, request.data)
        creator = request.auth if isinstance(request.auth, ApiKey) else None
        key, secret = api_keys.api_key_create(user=request_user(request), created_with=creator, **data)
        return Response(ApiKeyCreatedSerializer(key, context={"secret": secret}).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="list_api_keys",
        tags=["api-keys"],
        responses={200: ApiKeyListItemSerializer(many=True), **problem_responses(401, 403)},
    )
    def list(self, request: Request) -> Response:
        keys = selectors.api_key_list_for_owner(owner=request_user(request))
        return Response(ApiKeyListItemSerializer(keys, many=True).data)

    @extend_schema(
        operation_id="revoke_api_key",
        tags=["api-keys"],
        responses={204: OpenApiResponse(description="Revoked."), **problem_responses(401, 403, 404)},
    )
    def destroy(self, request: Request, pk: str) -> Response:
        key = selectors.api_key_get_for_owner(owner=request_user(request), key_id=pk)
        api_keys.api_key_revoke(key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)
