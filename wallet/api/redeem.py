"""POST /v1/wallet/redeem: an operator-issued credit code for instant credit."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_user
from core.idempotency import client_idempotency_key, idempotent
from core.openapi import problem_responses
from core.serializers import validated
from core.throttling import AccountRateThrottle, ClientAddressRateThrottle
from wallet.api.serializers import TopUpViewSerializer
from wallet.api.wallet import top_up_response
from wallet.services.redeem import code_redeem


class RedeemInputSerializer(serializers.Serializer[Any]):
    code = serializers.CharField(
        max_length=64, help_text="The code as issued (BTS-XXXX-XXXX-XXXX-XXXX); case, hyphens and spaces are ignored."
    )

    class Meta:
        ref_name = "RedeemInput"


class RedeemAddressThrottle(ClientAddressRateThrottle):
    """Redeem attempts per client address, whichever accounts they come from: many
    accounts made to guess codes from one machine are stopped too."""

    scope_attr = "address_throttle_scope"


class RedeemView(APIView):
    throttle_classes = [AccountRateThrottle, RedeemAddressThrottle]
    throttle_scope = "redeem"
    address_throttle_scope = "redeem_address"

    @extend_schema(
        operation_id="redeem_code",
        tags=["wallet"],
        request=RedeemInputSerializer,
        responses={200: TopUpViewSerializer, **problem_responses(400, 429)},
        description="Redeems a credit code: the wallet is credited at once and the answer is a confirmed Top-up "
        'view (method manual). Refused with 400 and one of the "redeem rejected" codes: redeem_code_unknown, '
        "redeem_code_used, redeem_code_expired, redeem_code_void. At most THROTTLE_REDEEM attempts per account "
        "(10 a minute by default) and THROTTLE_REDEEM_ADDRESS per client address (30 a minute), then 429. "
        "Idempotent: see Idempotency-Key in docs/api.md.",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(RedeemInputSerializer, request.data)
        return top_up_response(
            code_redeem(user=request_user(request), code=data["code"], client_key=client_idempotency_key(request))
        )
