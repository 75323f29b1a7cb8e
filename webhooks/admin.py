"""Operators' admin for webhooks: subscriptions (never their secrets) and the delivery log,
with disable/enable and redeliver through the services the API uses."""

from __future__ import annotations

from typing import TypeVar

from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from core.errors import ServiceError
from webhooks.models import DeliveryAttempt, WebhookDelivery, WebhookSubscription
from webhooks.services import deliveries
from webhooks.services import subscriptions as services

_ChildModel = TypeVar("_ChildModel", bound=Model)
_ParentModel = TypeVar("_ParentModel", bound=Model)


class ReadOnlyInline(admin.TabularInline[_ChildModel, _ParentModel]):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class DeliveryInline(ReadOnlyInline[WebhookDelivery, WebhookSubscription]):
    model = WebhookDelivery
    fields = readonly_fields = ("event_type", "event_id", "status", "attempt_count", "last_status_code", "created_at")
    ordering = ("-created_at",)


class AttemptInline(ReadOnlyInline[DeliveryAttempt, WebhookDelivery]):
    model = DeliveryAttempt
    show_change_link = False
    fields = readonly_fields = ("attempted_at", "status_code", "duration_ms", "error")
    ordering = ("attempted_at",)


SUBSCRIPTION_FIELDS = (
    "id",
    "owner",
    "url",
    "description",
    "event_types",
    "secret_prefix",
    "enabled",
    "disabled_reason",
    "disabled_at",
    "consecutive_failures",
    "created_at",
)


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(admin.ModelAdmin[WebhookSubscription]):
    list_display = ["url", "owner", "enabled", "consecutive_failures", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["url", "description", "owner__email"]
    fields = SUBSCRIPTION_FIELDS
    readonly_fields = tuple(field for field in SUBSCRIPTION_FIELDS if field != "description")
    inlines = [DeliveryInline]
    actions = ["disable", "enable"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # registered over the API, where the url is checked and the secret shown once

    @admin.action(description="Disable the selected webhooks (their pending deliveries fail)")
    def disable(self, request: HttpRequest, queryset: QuerySet[WebhookSubscription]) -> None:
        for subscription in queryset:
            services.subscription_disable(
                subscription=subscription, reason="Disabled by an operator.", notify_owner=True
            )
        self.message_user(request, f"{queryset.count()} webhook(s) disabled.", messages.SUCCESS)

    @admin.action(description="Enable the selected webhooks")
    def enable(self, request: HttpRequest, queryset: QuerySet[WebhookSubscription]) -> None:
        for subscription in queryset:
            services.subscription_update(subscription=subscription, enabled=True)
        self.message_user(request, f"{queryset.count()} webhook(s) enabled.", messages.SUCCESS)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin[WebhookDelivery]):
    list_display = ["event_type", "subscription", "status", "attempt_count", "last_status_code", "created_at"]
    list_filter = ["status", "event_type"]
    search_fields = ["event_id", "subscription__url", "subscription__owner__email"]
    fields = readonly_fields = (
        "id",
        "subscription",
        "event_id",
        "event_type",
        "status",
        "attempt_count",
        "next_attempt_at",
        "last_status_code",
        "last_error",
        "payload",
        "created_at",
        "updated_at",
        "finished_at",
    )
    inlines = [AttemptInline]
    actions = ["redeliver"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Redeliver the selected deliveries (the whole retry schedule again)")
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        """What the owner's redeliver does: same webhook-id and body, attempts from zero.
        A delivery still being tried, or of a disabled webhook, is refused and named."""
        queued = 0
        for delivery in queryset:
            try:
                deliveries.delivery_redeliver(delivery=delivery)
            except ServiceError as error:
                self.message_user(request, f"{delivery.event_id}: {error.detail}", messages.ERROR)
                continue
            self.log_change(request, delivery, f"Redelivered by {request.user}.")
            queued += 1
        self.message_user(request, f"{queued} deliver(ies) queued again.", messages.SUCCESS)
