"""The problem codes the wallet owns: the ledger's refusals, the price gate, top-ups and
their payment providers (Stripe, BTCPay Server), and redeem codes."""

from __future__ import annotations

from decimal import Decimal

from core.errors import ServiceError

# --- The ledger -------------------------------------------------------------------------------


class InsufficientCredit(ServiceError):
    """Spendable credit does not cover the amount. `shortfall` (Decimal) is the missing
    part; the problem body carries it as a JSON number (`shortfall`)."""

    code = "insufficient_credit"
    status = 402
    title = "Insufficient credit"
    description = (
        "Spendable credit (balance minus reserved) does not cover the amount; `shortfall` says how much is missing."
    )

    def __init__(self, *, shortfall: Decimal) -> None:
        self.shortfall = shortfall
        super().__init__(f"Spendable credit is short by {shortfall} USD.", shortfall=float(shortfall))


class HoldResolved(ServiceError):
    code = "hold_resolved"
    status = 409
    title = "Hold already resolved"
    description = "The hold was released and can no longer be settled."


class CreditCauseUsed(ServiceError):
    code = "credit_cause_used"
    status = 409
    title = "Credit already applied"
    description = "This cause (a top-up, a code, an operator action) has already credited another wallet."


class HoldCauseUsed(ServiceError):
    code = "hold_cause_used"
    status = 409
    title = "Hold cause already used"
    description = "This cause (a job) already has a hold on another wallet."


class RefundExists(ServiceError):
    """The batch charge of this job was refunded already."""

    code = "refund_exists"
    status = 409
    title = "Already refunded"
    description = "The batch charge of this job was refunded already; a charge is refunded at most once."


class ChargeNotFound(ServiceError):
    code = "charge_not_found"
    status = 404
    title = "No batch charge"
    description = "No batch charge exists for this job: there is nothing to refund."


class TopUpInFlight(ServiceError):
    code = "top_up_in_flight"
    status = 409
    title = "Top-up in flight"
    description = (
        "The account cannot be deleted while a top-up is pending: it could still credit a wallet nobody can use. "
        "Finish or cancel the payment (or let it expire), then delete the account."
    )


# --- The price gate of a batch ----------------------------------------------------------------


class SpendingCeilingReached(ServiceError):
    """The batch would take this month's spending past the owner's ceiling: more credit
    does not help, a higher ceiling or the next month does."""

    code = "spending_ceiling_reached"
    status = 402
    title = "Monthly spending ceiling reached"
    description = (
        "The batch would take this calendar month's spending (UTC) past the ceiling you set; raise or clear the "
        "ceiling, or wait for next month. `ceilingUsd`, `spentThisMonthUsd` and `estimatedUsd` give the figures."
    )


class NothingToProcess(ServiceError):
    code = "nothing_to_process"
    status = 409
    title = "Nothing to process"
    description = "The book has no included page waiting to be translated."


# --- Top-ups and their payment providers ------------------------------------------------------


class ManualTopUpDisabled(ServiceError):
    code = "manual_top_up_disabled"
    status = 403
    title = "Manual top-ups are disabled"
    description = "Instant manual credit exists only on development deployments; pay by card or crypto."


class PaymentMethodUnavailable(ServiceError):
    code = "payment_method_unavailable"
    status = 403
    title = "Payment method unavailable"
    description = "This deployment has no provider configured for the payment method; try another method."


class PaymentProviderError(ServiceError):
    code = "payment_provider_error"
    status = 502
    title = "Payment provider unavailable"
    description = (
        "The payment provider could not be reached or answered with an error; nothing was charged. Retry later."
    )


class StripeSignatureInvalid(ServiceError):
    code = "stripe_signature_invalid"
    status = 400
    title = "Stripe webhook signature invalid"
    description = (
        "The Stripe-Signature header is missing, malformed, too old, or does not match the HMAC-SHA256 of the raw "
        "body with the endpoint's signing secret (or the body is not an event). Nothing was changed."
    )


class BtcpaySignatureInvalid(ServiceError):
    code = "btcpay_signature_invalid"
    status = 400
    title = "BTCPay webhook signature invalid"
    description = (
        "The BTCPay-Sig header is missing, or is not sha256= followed by the HMAC-SHA256 of the raw body with the "
        "webhook's secret. Nothing was changed."
    )


# --- Redeem codes -----------------------------------------------------------------------------


class RedeemRejected(ServiceError):
    """The code cannot be redeemed; the subclass says why (unknown, used, expired, void)."""


class RedeemCodeUnknown(RedeemRejected):
    code = "redeem_code_unknown"
    status = 400
    title = "Redeem rejected: unknown code"
    description = (
        "No credit code matches what was sent. Check it was copied whole (hyphens, spaces and case do not matter)."
    )


class RedeemCodeUsed(RedeemRejected):
    code = "redeem_code_used"
    status = 400
    title = "Redeem rejected: code already redeemed"
    description = "This credit code has already been redeemed; each code credits one wallet once."


class RedeemCodeExpired(RedeemRejected):
    code = "redeem_code_expired"
    status = 400
    title = "Redeem rejected: code expired"
    description = "This credit code passed its expiry date and can no longer be redeemed."


class RedeemCodeVoid(RedeemRejected):
    code = "redeem_code_void"
    status = 400
    title = "Redeem rejected: code withdrawn"
    description = "The issuer withdrew this credit code (or its whole batch); it can no longer be redeemed."
