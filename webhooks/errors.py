"""Problem codes owned by webhooks."""

from core.problems import register

register(
    "webhook_url_invalid",
    400,
    "Invalid webhook address",
    "The webhook url must be an absolute http or https address with a host name, no user name or password, "
    "at most 2048 characters.",
)
register(
    "webhook_address_forbidden",
    400,
    "Webhook address not allowed",
    "The webhook host is, or resolves to, an address that is not public (private, loopback, link-local, "
    "shared CGNAT, multicast, unspecified, reserved or documentation ranges, IPv4 and IPv6). Use a public address.",
)
register(
    "webhook_limit_reached",
    409,
    "Too many webhooks",
    "The account has as many webhook subscriptions as allowed; delete one first.",
)
register(
    "webhook_disabled",
    409,
    "Webhook disabled",
    "The subscription is disabled (see disabledReason); enable it with PATCH /v1/webhooks/{id} first.",
)
register(
    "webhook_delivery_pending",
    409,
    "Delivery still pending",
    "The delivery is still being tried; it can be redelivered once it succeeded, failed or died.",
)
