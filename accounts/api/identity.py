"""HTTP endpoint of external sign-in: an OpenID Connect ID token in, a session out."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api.accounts import AnonymousView, session_response
from accounts.api.serializers import SessionSerializer
from accounts.services import oidc
from core.openapi import problem_responses
from core.serializers import validated


class OAuthSignInInputSerializer(serializers.Serializer[Any]):
    id_token = serializers.CharField(max_length=16384, help_text="The ID token (a JWT) the provider issued.")
    nonce = serializers.CharField(
        max_length=512,
        required=False,
        allow_null=True,
        help_text="When sent, the token's nonce claim must equal it exactly.",
    )
    display_name = serializers.CharField(
        max_length=150,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Name for a new account when the token has no name claim (Apple passes the name to the app only).",
    )


class OAuthSignInView(AnonymousView):
    throttle_scope = "oauth"

    @extend_schema(
        operation_id="sign_in_with_provider",
        tags=["auth"],
        auth=[],
        parameters=[
            OpenApiParameter(
                "provider",
                str,
                OpenApiParameter.PATH,
                description="A configured identity provider: google, apple, or one added by configuration.",
            )
        ],
        request=OAuthSignInInputSerializer,
        responses={200: SessionSerializer, **problem_responses(400, 401, 404, 409, 429, 503)},
        description="Sign in with an OpenID Connect ID token. The first sign-in of an identity links it to the "
        "account with the same provider-verified email, or creates an account without a password. "
        "`identity_token_invalid` (401) when the token fails verification, `provider_unknown` (404), "
        "`email_taken` (409) when an unverified email belongs to another account, `account_disabled` (401), "
        "`provider_unavailable` (503) when the provider's keys cannot be fetched.",
    )
    def post(self, request: Request, provider: str) -> Response:
        user = oidc.identity_sign_in(provider=provider, **validated(OAuthSignInInputSerializer, request.data))
        return session_response(user)
