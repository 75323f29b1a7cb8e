"""Problem codes of crypto top-ups through BTCPay Server (registered when wallet.services.btcpay is imported)."""

from core.problems import register

register(
    "btcpay_signature_invalid",
    400,
    "BTCPay webhook signature invalid",
    "The BTCPay-Sig header is missing, or is not sha256= followed by the HMAC-SHA256 of the raw body with the "
    "webhook's secret. Nothing was changed.",
)
