"""wallet: the prepaid USD wallet — an append-only ledger, the wallet row (balance and
reserved) and holds (two-phase charges: place, then settle or release exactly once) —
the price table and batch quotes (pricing), top-ups by card (Stripe) and crypto (BTCPay),
credit codes, auto top-up, low-balance alerts and the monthly spending ceiling.

Layers: wallet imports core and accounts, and knows nothing of projects (a quote is given
page counts and measured costs, not a book). Where it does not hold yet: `wallet/events.py`
publishes through `webhooks.events` (an app above it), and the wallet tells projects that
credit landed through Django signals (`wallet.signals`); both are to go through core's
event bus (issue 16).
"""
