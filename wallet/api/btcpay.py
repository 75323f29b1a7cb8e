"""HTTP endpoint BTCPay Server calls: the store's webhook (crypto top-ups)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.openapi import problem_responses
from wallet.services import btcpay

WebhookReceivedSerializer = inline_serializer(
    name="BtcpayWebhookReceived", fields={"received": serializers.BooleanField(default=True)}
)


class BtcpayWebhookView(APIView):
    """POST /v1/payments/btcpay/webhook: anonymous; the BTCPay-Sig header is the credential."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    # The payment processor's callback, not part of the public API: left out of /v1/schema
    # (docs/payments-*.md describe it).
    @extend_schema(
        exclude=True,
        operation_id="payments_btcpay_webhook",
        tags=["wallet"],
        auth=[],
        request=OpenApiTypes.OBJECT,
        responses={200: WebhookReceivedSerializer, **problem_responses(400, 502)},
        description="Called by BTCPay Server, not by clients. The raw body must be signed "
        "`BTCPay-Sig: sha256=<hex HMAC-SHA256 of the body with the webhook's secret>`, else 400 "
        "btcpay_signature_invalid and nothing changes. The invoice named in the body is read back from "
        "BTCPay and its real status applied to the crypto top-up; events for other stores or unknown "
        "invoices are acknowledged and ignored. 502 when BTCPay cannot be read (BTCPay then redelivers).",
    )
    def post(self, request: Request) -> Response:
        btcpay.webhook_handle(payload=request.body, signature=request.headers.get("BTCPay-Sig"))
        return Response({"received": True})
