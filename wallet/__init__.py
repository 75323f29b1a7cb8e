"""wallet: the prepaid USD wallet — an append-only ledger, the wallet row (balance and
reserved) and holds (two-phase charges: place, then settle or release exactly once) —
the price table and batch quotes (pricing), top-ups by card (Stripe) and crypto (BTCPay),
credit codes, auto top-up, low-balance alerts and the monthly spending ceiling.

Layers: wallet imports core and accounts, and knows nothing of projects (a quote is given
page counts and measured costs, not a book). It tells the apps above it (projects: credit
landed, spending room grew; webhooks: a top-up confirmed, a low balance) by publishing
`wallet.events` on core's event bus, which they subscribe to in their `ready()`.
"""
