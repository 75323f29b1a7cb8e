"""Wire shapes of webhook subscriptions and their delivery log (camelCase on the wire)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from webhooks.addresses import MAX_URL_LENGTH
from webhooks.events import EVENT_TYPES
from webhooks.models import DeliveryAttempt, DeliveryStatus, WebhookDelivery, WebhookSubscription

URL_HELP = (
    "Absolute http or https address. Its host, and every address it resolves to, must be public: never "
    "private, loopback, link-local, CGNAT, multicast, unspecified, reserved or documentation ranges (IPv4 and IPv6)."
)
EVENT_TYPES_HELP = "The event types to receive; empty or omitted: all of them."


class WebhookCreateInputSerializer(serializers.Serializer[Any]):
    url = serializers.CharField(max_length=MAX_URL_LENGTH, help_text=URL_HELP)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES),
        required=False,
        default=list,
        max_length=len(EVENT_TYPES) * 2,
        help_text=EVENT_TYPES_HELP,
    )


class WebhookUpdateInputSerializer(serializers.Serializer[Any]):
    url = serializers.CharField(max_length=MAX_URL_LENGTH, required=False, help_text=URL_HELP)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES),
        required=False,
        max_length=len(EVENT_TYPES) * 2,
        help_text=EVENT_TYPES_HELP,
    )
    enabled = serializers.BooleanField(
        required=False, help_text="true enables a disabled webhook (and clears its failure count); false disables it."
    )


class WebhookSubscriptionSerializer(serializers.ModelSerializer[WebhookSubscription]):
    event_types = serializers.ListField(child=serializers.CharField(), help_text=EVENT_TYPES_HELP)
    secret_prefix = serializers.CharField(help_text="The secret's first characters, to recognise it; never the secret.")
    disabled_reason = serializers.CharField(help_text="Why it was disabled; empty while enabled.")
    disabled_utc = serializers.DateTimeField(source="disabled_at", allow_null=True)
    consecutive_failures = serializers.IntegerField(help_text="Dead deliveries in a row; a success resets it.")
    created_utc = serializers.DateTimeField(source="created_at")

    class Meta:
        model = WebhookSubscription
        fields = [
            "id",
            "url",
            "description",
            "event_types",
            "secret_prefix",
            "enabled",
            "disabled_reason",
            "disabled_utc",
            "consecutive_failures",
            "created_utc",
        ]
        ref_name = "WebhookSubscription"


class WebhookCreatedSerializer(WebhookSubscriptionSerializer):
    secret = serializers.SerializerMethodField(
        help_text="The signing secret (whsec_ + base64). Shown only here, once: keep it."
    )

    class Meta(WebhookSubscriptionSerializer.Meta):
        fields = [*WebhookSubscriptionSerializer.Meta.fields, "secret"]
        ref_name = "WebhookSubscriptionCreated"

    def get_secret(self, subscription: WebhookSubscription) -> str:
        secret: str = self.context["secret"]
        return secret


class WebhookSecretRotatedSerializer(serializers.Serializer[Any]):
    subscription_id = serializers.UUIDField()
    secret = serializers.CharField(help_text="The new signing secret, shown only here; the old one no longer signs.")
    secret_prefix = serializers.CharField()

    class Meta:
        ref_name = "WebhookSecretRotated"


class DeliveryAttemptSerializer(serializers.ModelSerializer[DeliveryAttempt]):
    attempted_utc = serializers.DateTimeField(source="attempted_at")
    status_code = serializers.IntegerField(allow_null=True, help_text="The endpoint's HTTP status; null: no answer.")
    duration_ms = serializers.IntegerField()
    error = serializers.CharField(help_text="What went wrong; empty on success.")

    class Meta:
        model = DeliveryAttempt
        fields = ["attempted_utc", "status_code", "duration_ms", "error"]
        ref_name = "WebhookDeliveryAttempt"


class WebhookDeliverySerializer(serializers.ModelSerializer[WebhookDelivery]):
    event_id = serializers.CharField(help_text="The webhook-id header: the same on every attempt of this event.")
    status = serializers.ChoiceField(
        choices=DeliveryStatus.choices,
        help_text="pending: being tried; succeeded: 2xx; dead: every attempt failed; failed: the webhook was disabled.",
    )
    attempt_count = serializers.IntegerField(help_text="Attempts in the current round (redeliver starts a new one).")
    next_attempt_utc = serializers.DateTimeField(source="next_attempt_at", allow_null=True)
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    payload = serializers.JSONField(help_text="The body sent: {type, timestamp, data}.")
    created_utc = serializers.DateTimeField(source="created_at")
    finished_utc = serializers.DateTimeField(source="finished_at", allow_null=True)
    attempts = DeliveryAttemptSerializer(many=True, help_text="Every attempt, oldest first.")

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_id",
            "event_type",
            "status",
            "attempt_count",
            "next_attempt_utc",
            "last_status_code",
            "last_error",
            "payload",
            "created_utc",
            "finished_utc",
            "attempts",
        ]
        ref_name = "WebhookDelivery"


class WebhookDeliveryPageSerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    next = serializers.CharField(allow_null=True, help_text="The next page's address; null on the last page.")
    previous = serializers.CharField(allow_null=True)
    results = WebhookDeliverySerializer(many=True)

    class Meta:
        ref_name = "WebhookDeliveryPage"
