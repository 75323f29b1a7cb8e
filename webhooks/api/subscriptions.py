"""HTTP endpoints of webhooks: thin, each parses, calls one service or selector, renders."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.authentication import request_user
from core.idempotency import idempotent
from core.openapi import problem_responses
from core.pagination import StrictPageNumberPagination
from core.serializers import validated
from webhooks import selectors
from webhooks.api.serializers import (
    WebhookCreatedSerializer,
    WebhookCreateInputSerializer,
    WebhookDeliveryPageSerializer,
    WebhookDeliverySerializer,
    WebhookSecretRotatedSerializer,
    WebhookSubscriptionSerializer,
    WebhookUpdateInputSerializer,
)
from webhooks.models import WebhookSubscription
from webhooks.services import deliveries
from webhooks.services import subscriptions as services

UUID_PATTERN = "[0-9a-fA-F-]{36}"
ID_PARAMETER = OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The webhook's id.")
DELIVERY_ID_PARAMETER = OpenApiParameter(
    "delivery_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The delivery's id."
)
TAGS = ["webhooks"]


class DeliveryPagination(StrictPageNumberPagination):
    page_size = 50
    max_page_size = 200


class WebhookViewSet(viewsets.ViewSet):
    """Signed webhook subscriptions of the signed-in account, and their delivery log."""

    lookup_value_regex = UUID_PATTERN

    def _subscription(self, request: Request, pk: str) -> WebhookSubscription:
        return selectors.subscription_get_for_owner(owner=request_user(request), subscription_id=pk)

    @extend_schema(
        operation_id="create_webhook",
        tags=TAGS,
        request=WebhookCreateInputSerializer,
        responses={201: WebhookCreatedSerializer, **problem_responses(400, 401, 403, 409, 422)},
        description="Register a webhook. The url is checked (400 webhook_url_invalid, webhook_address_forbidden "
        "when its host is or resolves to an address that is not public; a name that does not resolve yet is "
        "accepted, and every delivery checks it again). The signing secret is in this response only. Idempotent: see "
        "Idempotency-Key in docs/api.md.",
    )
    @idempotent
    def create(self, request: Request) -> Response:
        data = validated(WebhookCreateInputSerializer, request.data)
        subscription, secret = services.subscription_create(owner=request_user(request), **data)
        body = WebhookCreatedSerializer(subscription, context={"secret": secret}).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="list_webhooks",
        tags=TAGS,
        responses={200: WebhookSubscriptionSerializer(many=True), **problem_responses(401, 403)},
        description="The account's webhooks, newest first; never their secrets.",
    )
    def list(self, request: Request) -> Response:
        subscriptions = selectors.subscription_list_for_owner(owner=request_user(request))
        return Response(WebhookSubscriptionSerializer(subscriptions, many=True).data)

    @extend_schema(
        operation_id="get_webhook",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        responses={200: WebhookSubscriptionSerializer, **problem_responses(401, 403, 404)},
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(WebhookSubscriptionSerializer(self._subscription(request, pk)).data)

    @extend_schema(
        operation_id="update_webhook",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        request=WebhookUpdateInputSerializer,
        responses={200: WebhookSubscriptionSerializer, **problem_responses(400, 401, 403, 404)},
        description="Change the url (checked as at registration), description or event types, or enable "
        "(clearing the failure count) or disable the webhook. Omitted fields stay as they are.",
    )
    def partial_update(self, request: Request, pk: str) -> Response:
        data = validated(WebhookUpdateInputSerializer, request.data)
        subscription = services.subscription_update(subscription=self._subscription(request, pk), **data)
        return Response(WebhookSubscriptionSerializer(subscription).data)

    @extend_schema(
        operation_id="delete_webhook",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        responses={204: OpenApiResponse(description="Deleted, with its delivery log."), **problem_responses(404)},
    )
    def destroy(self, request: Request, pk: str) -> Response:
        services.subscription_delete(subscription=self._subscription(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="rotate_webhook_secret",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        request=None,
        responses={200: WebhookSecretRotatedSerializer, **problem_responses(404)},
        description="Replace the signing secret. The new one is in this response only; the old one stops "
        "signing at once (retries of earlier events are signed with the new one).",
    )
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, pk: str) -> Response:
        subscription, secret = services.subscription_secret_rotate(subscription=self._subscription(request, pk))
        body = {"subscription_id": subscription.pk, "secret": secret, "secret_prefix": subscription.secret_prefix}
        return Response(WebhookSecretRotatedSerializer(body).data)

    @extend_schema(
        operation_id="send_test_event",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        request=None,
        responses={202: WebhookDeliverySerializer, **problem_responses(404, 409, 422)},
        description="Send a `webhook.test` event to this webhook only, signed and retried like any event; "
        "follow it in the delivery log. 409 webhook_disabled while the webhook is disabled.",
    )
    @action(detail=True, methods=["post"], url_path="test")
    @idempotent
    def test(self, request: Request, pk: str) -> Response:
        delivery = deliveries.delivery_test_send(subscription=self._subscription(request, pk))
        return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="list_webhook_deliveries",
        tags=TAGS,
        parameters=[ID_PARAMETER, *DeliveryPagination.query_parameters()],
        responses={200: WebhookDeliveryPageSerializer, **problem_responses(404)},
        description="The delivery log: every delivery, newest first, with each attempt (time, status code, "
        "duration, error); 50 a page, at most 200.",
    )
    @action(detail=True, methods=["get"], url_path="deliveries")
    def delivery_log(self, request: Request, pk: str) -> Response:
        log = selectors.delivery_log_for_subscription(subscription=self._subscription(request, pk))
        paginator = DeliveryPagination()
        page = paginator.paginate_queryset(log, request, view=self)
        return paginator.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)

    @extend_schema(
        operation_id="redeliver_webhook_delivery",
        tags=TAGS,
        parameters=[ID_PARAMETER, DELIVERY_ID_PARAMETER],
        request=None,
        responses={202: WebhookDeliverySerializer, **problem_responses(404, 409, 422)},
        description="Send a delivery again (same webhook-id and body, a new round of the retry schedule) once "
        "it succeeded, failed or died; 409 webhook_delivery_pending while it is still being tried.",
    )
    @action(detail=True, methods=["post"], url_path=rf"deliveries/(?P<delivery_id>{UUID_PATTERN})/redeliver")
    @idempotent
    def redeliver(self, request: Request, pk: str, delivery_id: str) -> Response:
        subscription = self._subscription(request, pk)
        delivery = selectors.delivery_get_for_subscription(subscription=subscription, delivery_id=delivery_id)
        delivery = deliveries.delivery_redeliver(delivery=delivery)
        return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
