"""The problem codes webhooks owns: the subscription's address, its limit and state, and
a redelivery asked for too early."""

from __future__ import annotations

from core.errors import ServiceError


class UrlInvalid(ServiceError):
    code = "webhook_url_invalid"
    status = 400
    title = "Invalid webhook address"
    description = (
        "The webhook url must be an absolute http or https address with a host name, no user name or password, "
        "at most 2048 characters."
    )


class AddressForbidden(ServiceError):
    code = "webhook_address_forbidden"
    status = 400
    title = "Webhook address not allowed"
    description = (
        "The webhook host is, or resolves to, an address that is not public (private, loopback, link-local, "
        "shared CGNAT, multicast, unspecified, reserved or documentation ranges, IPv4 and IPv6). Use a public address."
    )


class WebhookLimitReached(ServiceError):
    code = "webhook_limit_reached"
    status = 409
    title = "Too many webhooks"
    description = "The account has as many webhook subscriptions as allowed; delete one first."


class WebhookDisabled(ServiceError):
    code = "webhook_disabled"
    status = 409
    title = "Webhook disabled"
    description = "The subscription is disabled (see disabledReason); enable it with PATCH /v1/webhooks/{id} first."


class DeliveryPending(ServiceError):
    code = "webhook_delivery_pending"
    status = 409
    title = "Delivery still pending"
    description = "The delivery is still being tried; it can be redelivered once it succeeded, failed or died."
