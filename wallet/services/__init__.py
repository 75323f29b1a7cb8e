"""Every write of the wallet, from the bottom up: the ledger, holds and credit (ledger.py);
top-up rows, confirmed or resolved exactly once (topups.py); the payment providers (Stripe:
stripe_gateway.py; BTCPay: btcpay.py), which confirm the rows; starting a top-up with a
provider (checkout.py); low-balance alerts and auto top-up (alerts.py); billing preferences
and the spending ceiling (preferences.py); credit codes (redeem.py). A module imports only
those listed before it."""
