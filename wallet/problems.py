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
