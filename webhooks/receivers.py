"""Where webhooks and the hub listen to accounts (connected in WebhooksConfig.ready)."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from accounts.models import User
from webhooks.hub import CLOSE_ACCOUNT_DELETED, hub_owner_disconnect
from webhooks.services import owner_subscriptions_delete


def end_on_account_closing(sender: Any, *, user: User, **kwargs: Any) -> None:
    """An account is being deleted (inside its transaction): its subscriptions go with
    their deliveries, and once committed its hub connections are closed (4410)."""
    owner_subscriptions_delete(owner=user)
    transaction.on_commit(
        partial(hub_owner_disconnect, owner_id=user.pk, code=CLOSE_ACCOUNT_DELETED, reason="account_deleted")
    )
