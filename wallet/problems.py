"""Problem codes owned by the wallet."""

from core.problems import register

register(
    "insufficient_credit",
    402,
    "Insufficient credit",
    "Spendable credit (balance minus reserved) does not cover the amount; `shortfall` says how much is missing.",
)
register(
    "hold_resolved",
    409,
    "Hold already resolved",
    "The hold was released and can no longer be settled.",
)
register(
    "credit_cause_used",
    409,
    "Credit already applied",
    "This cause (a top-up, a code, an operator action) has already credited another wallet.",
)
register(
    "hold_cause_used",
    409,
    "Hold cause already used",
    "This cause (a job) already has a hold on another wallet.",
)
register(
    "manual_top_up_disabled",
    403,
    "Manual top-ups are disabled",
    "Instant manual credit exists only on development deployments; pay by card or crypto.",
)
register(
    "payment_method_unavailable",
    403,
    "Payment method unavailable",
    "This deployment has no provider configured for the payment method; try another method.",
)
register(
    "payment_provider_error",
    502,
    "Payment provider unavailable",
    "The payment provider could not be reached or answered with an error; nothing was charged. Retry later.",
)
register(
    "spending_ceiling_reached",
    402,
    "Monthly spending ceiling reached",
    "The batch would take this calendar month's spending (UTC) past the ceiling you set; raise or clear the "
    "ceiling, or wait for next month. `ceilingUsd`, `spentThisMonthUsd` and `estimatedUsd` give the figures.",
)
register(
    "nothing_to_process",
    409,
    "Nothing to process",
    "The book has no included page waiting to be translated.",
)
register(
    "redeem_code_unknown",
    400,
    "Redeem rejected: unknown code",
    "No credit code matches what was sent. Check it was copied whole (hyphens, spaces and case do not matter).",
)
register(
    "redeem_code_used",
    400,
    "Redeem rejected: code already redeemed",
    "This credit code has already been redeemed; each code credits one wallet once.",
)
register(
    "redeem_code_expired",
    400,
    "Redeem rejected: code expired",
    "This credit code passed its expiry date and can no longer be redeemed.",
)
register(
    "redeem_code_void",
    400,
    "Redeem rejected: code withdrawn",
    "The issuer withdrew this credit code (or its whole batch); it can no longer be redeemed.",
)
register(
    "refund_exists",
    409,
    "Already refunded",
    "The batch charge of this job was refunded already; a charge is refunded at most once.",
)
register(
    "charge_not_found",
    404,
    "No batch charge",
    "No batch charge exists for this job: there is nothing to refund.",
)
register(
    "top_up_in_flight",
    409,
    "Top-up in flight",
    "The account cannot be deleted while a top-up is pending: it could still credit a wallet nobody can use. "
    "Finish or cancel the payment (or let it expire), then delete the account.",
)
