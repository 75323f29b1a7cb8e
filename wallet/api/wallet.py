"""HTTP endpoints of the wallet: thin, each parses, calls one service or selector, renders."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_user
from core.idempotency import client_idempotency_key, idempotent
from core.openapi import problem_responses
from core.pagination import StrictPageNumberPagination
from core.serializers import validated
from wallet.api.serializers import (
    AutoTopUpInputSerializer,
    LedgerEntrySerializer,
    LowBalanceAlertInputSerializer,
    SpendingCeilingInputSerializer,
    TopUpInputSerializer,
    TopUpViewSerializer,
    WalletViewSerializer,
)
from wallet.models import TopUp
from wallet.selectors import wallet as selectors
from wallet.services import checkout, preferences


def wallet_response(view: selectors.WalletView) -> Response:
    return Response(WalletViewSerializer(view.as_wire()).data)


def top_up_response(top_up: TopUp) -> Response:
    """The Top-up view with the owner's balance as it now is."""
    balance = selectors.wallet_view_for(user=top_up.user).balance
    return Response(TopUpViewSerializer.of(top_up, balance=balance))


class WalletView(APIView):
    @extend_schema(operation_id="get_wallet", tags=["wallet"], responses={200: WalletViewSerializer})
    def get(self, request: Request) -> Response:
        return wallet_response(selectors.wallet_view_for(user=request_user(request)))


class LedgerPagination(StrictPageNumberPagination):
    page_size = 50
    max_page_size = 500


class LedgerView(APIView):
    pagination_class = LedgerPagination  # the schema shows the page envelope

    @extend_schema(
        operation_id="list_ledger_entries",
        tags=["wallet"],
        parameters=LedgerPagination.query_parameters(),
        responses={200: LedgerEntrySerializer(many=True)},
        description="Where the money went: every ledger entry, newest first, paginated (50 a page, at most 500). "
        "`amountUsd` is the signed change to spendable credit: credits positive, charges negative, a hold "
        "negative and its release positive (see docs/billing.md).",
    )
    def get(self, request: Request) -> Response:
        entries = selectors.ledger_for_owner(owner=request_user(request))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(entries, request, view=self)
        return paginator.get_paginated_response(LedgerEntrySerializer(page, many=True).data)


class TopUpView(APIView):
    @extend_schema(
        operation_id="top_up_wallet",
        tags=["wallet"],
        request=TopUpInputSerializer,
        responses={200: TopUpViewSerializer, **problem_responses(403, 409, 422, 502)},
        description="manual: instant credit, development deployments only (else 403 manual_top_up_disabled). "
        "card without savedCardId: a pending view with a Stripe Checkout checkoutUrl; with savedCardId: the "
        "card is charged at once (confirmed, or failed with the reason). crypto: a pending view with the "
        "invoice's checkoutUrl, address, coin and amount. Idempotent: see Idempotency-Key in docs/api.md.",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(TopUpInputSerializer, request.data)
        return top_up_response(
            checkout.top_up_request(user=request_user(request), client_key=client_idempotency_key(request), **data)
        )


class TopUpDetailView(APIView):
    @extend_schema(operation_id="get_top_up", tags=["wallet"], responses={200: TopUpViewSerializer})
    def get(self, request: Request, reference: str) -> Response:
        return top_up_response(selectors.top_up_for_owner(owner=request_user(request), reference=reference))


class AutoTopUpView(APIView):
    @extend_schema(
        operation_id="set_auto_top_up",
        tags=["wallet"],
        request=AutoTopUpInputSerializer,
        responses={200: WalletViewSerializer},
        description="threshold and amount both set (enable) or both null (disable); monthlyCap optional (null: "
        "no cap). Charges the primary saved card off-session when spendable credit falls to the threshold.",
    )
    def put(self, request: Request) -> Response:
        data = validated(AutoTopUpInputSerializer, request.data)
        return wallet_response(preferences.auto_top_up_set(user=request_user(request), **data))


class LowBalanceAlertView(APIView):
    @extend_schema(
        operation_id="set_low_balance_alert",
        tags=["wallet"],
        request=LowBalanceAlertInputSerializer,
        responses={200: WalletViewSerializer},
        description="An email once the balance falls to or below the threshold, at most once per rolling "
        "24 hours; never charges. A null or omitted threshold disables it.",
    )
    def put(self, request: Request) -> Response:
        data = validated(LowBalanceAlertInputSerializer, request.data)
        return wallet_response(preferences.low_balance_alert_set(user=request_user(request), **data))


class SpendingCeilingView(APIView):
    @extend_schema(
        operation_id="set_spending_ceiling",
        tags=["wallet"],
        request=SpendingCeilingInputSerializer,
        responses={200: WalletViewSerializer},
        description="The most batches may charge in a calendar month (UTC). A batch that would pass it is "
        "refused with 402 spending_ceiling_reached. Null disables it.",
    )
    def put(self, request: Request) -> Response:
        data = validated(SpendingCeilingInputSerializer, request.data)
        return wallet_response(preferences.spending_ceiling_set(user=request_user(request), **data))
