"""HTTP endpoints of card payments: the owner's saved cards, and Stripe's webhook. Thin:
each calls one function of wallet.services.stripe_gateway and renders."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_user
from core.openapi import problem_responses
from wallet.models import SavedCard
from wallet.services import stripe_gateway


class SavedCardSerializer(serializers.ModelSerializer[SavedCard]):
    created_utc = serializers.DateTimeField(source="created_at")

    class Meta:
        model = SavedCard
        fields = ["id", "brand", "last4", "exp_month", "exp_year", "is_primary", "created_utc"]
        extra_kwargs = {
            "brand": {"help_text": "Card brand as Stripe names it (visa, mastercard, amex, ...)."},
            "last4": {"help_text": "The card number's last four digits."},
            "is_primary": {"help_text": "The card auto top-up charges."},
        }
        ref_name = "SavedCard"


class SavedCardListView(APIView):
    @extend_schema(
        operation_id="list_cards",
        tags=["wallet"],
        responses={200: SavedCardSerializer(many=True)},
        description="The cards saved by card top-ups through a checkout, the primary first. Pay with one at once: "
        "POST /v1/wallet/top-up with method card and savedCardId.",
    )
    def get(self, request: Request) -> Response:
        cards = stripe_gateway.cards_for_owner(request_user(request))
        return Response(SavedCardSerializer(cards, many=True).data)


class SavedCardDetailView(APIView):
    @extend_schema(
        operation_id="remove_card",
        tags=["wallet"],
        responses={204: None, **problem_responses(403, 502)},
        description="Detaches the card at Stripe and forgets it. The newest remaining card becomes primary if this "
        "one was; removing the last card turns auto top-up off.",
    )
    def delete(self, request: Request, card_id: uuid.UUID) -> Response:
        stripe_gateway.card_remove(owner=request_user(request), card_id=card_id)
        return Response(status=204)


class SavedCardPrimaryView(APIView):
    @extend_schema(
        operation_id="make_card_primary",
        tags=["wallet"],
        request=None,
        responses={200: SavedCardSerializer},
        description="Makes this card the one auto top-up charges.",
    )
    def post(self, request: Request, card_id: uuid.UUID) -> Response:
        card = stripe_gateway.card_make_primary(owner=request_user(request), card_id=card_id)
        return Response(SavedCardSerializer(card).data)


class StripeWebhookView(APIView):
    """Stripe's deliveries: anonymous, authenticated by the Stripe-Signature header over
    the raw body (never parsed before it is verified)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    # The payment processor's callback, not part of the public API: left out of /v1/schema
    # (docs/payments-*.md describe it).
    @extend_schema(
        exclude=True,
        operation_id="payments_stripe_webhook",
        tags=["wallet"],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: OpenApiResponse(
                inline_serializer(name="StripeWebhookReceived", fields={"received": serializers.BooleanField()}),
                description="The event was verified and applied, or acknowledged and ignored.",
            ),
            **problem_responses(403, 502),
        },
        description="Stripe's event destination (checkout.session.*, payment_intent.succeeded and "
        "payment_intent.payment_failed). A missing or wrong Stripe-Signature is 400 stripe_signature_invalid and "
        "changes nothing; events of other types, or about unknown top-ups, are acknowledged and ignored.",
    )
    def post(self, request: Request) -> Response:
        stripe_gateway.webhook_handle(payload=request.body, signature=request.headers.get("Stripe-Signature"))
        return Response({"received": True})
