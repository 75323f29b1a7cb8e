"""Problem codes of card top-ups through Stripe (registered when wallet.services.stripe_gateway is imported)."""

from core.problems import register

register(
    "stripe_signature_invalid",
    400,
    "Stripe webhook signature invalid",
    "The Stripe-Signature header is missing, malformed, too old, or does not match the HMAC-SHA256 of the raw "
    "body with the endpoint's signing secret (or the body is not an event). Nothing was changed.",
)
