"""Where the wallet handles other apps' events (subscribed in WalletConfig.ready)."""

from __future__ import annotations

from accounts.events import AccountClosing
from wallet.services.ledger import wallet_account_close


def close_on_account_closing(event: AccountClosing) -> None:
    """An account is being deleted (inside its transaction): refused while a top-up is
    pending; the saved cards and billing preferences go, the ledger stays."""
    wallet_account_close(user=event.user)
