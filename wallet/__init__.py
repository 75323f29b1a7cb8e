"""wallet: the prepaid USD wallet — an append-only ledger, the wallet row (balance and
reserved) and holds (two-phase charges: place, then settle or release exactly once)."""
