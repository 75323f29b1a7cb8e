"""Where the wallet listens to accounts (connected in WalletConfig.ready)."""

from __future__ import annotations

from typing import Any

from accounts.models import User
from wallet.services import wallet_account_close


def close_on_account_closing(sender: Any, *, user: User, **kwargs: Any) -> None:
    """An account is being deleted (inside its transaction): refused while a top-up is
    pending; the saved cards and billing preferences go, the ledger stays."""
    wallet_account_close(user=user)
