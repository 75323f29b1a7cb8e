"""What the wallet publishes on the event bus (webhooks/events.py): confirmed top-ups and
low balances. Called inside the transaction that made the change; sent after it commits."""

from __future__ import annotations

import uuid
from typing import Any

from webhooks.events import WALLET_LOW_BALANCE, WALLET_TOP_UP_CONFIRMED, publish


def top_up_confirmed_publish(*, top_up_id: uuid.UUID, owner_id: uuid.UUID) -> None:
    """wallet.top_up_confirmed, carrying the Top-up view (a redeemed code included)."""

    def top_up_view() -> dict[str, Any]:
        from wallet.models import TopUp
        from wallet.selectors import wallet_view_for
        from wallet.serializers import TopUpViewSerializer

        top_up = TopUp.objects.select_related("user").get(pk=top_up_id)
        return TopUpViewSerializer.of(top_up, balance=wallet_view_for(user=top_up.user).balance)

    publish(WALLET_TOP_UP_CONFIRMED, owner_id=owner_id, data=top_up_view)


def low_balance_publish(*, owner_id: uuid.UUID) -> None:
    """wallet.low_balance, carrying the Wallet view."""

    def wallet_view() -> dict[str, Any]:
        from accounts.models import User
        from wallet.selectors import wallet_view_for
        from wallet.serializers import WalletViewSerializer

        return dict(WalletViewSerializer(wallet_view_for(user=User.objects.get(pk=owner_id)).as_wire()).data)

    publish(WALLET_LOW_BALANCE, owner_id=owner_id, data=wallet_view)
