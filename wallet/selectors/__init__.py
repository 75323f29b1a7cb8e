"""Every composed read of the wallet: the wallet view, spending this month, auto top-up's
blockers, a top-up by reference (wallet.py), and the price table and batch quotes
(pricing.py). Selectors write nothing."""
