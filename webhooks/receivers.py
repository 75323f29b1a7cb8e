"""Where webhooks and the hub listen to accounts (connected in WebhooksConfig.ready):
an account deleted, an API key revoked, a password changed."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from accounts.models import ApiKey, User
from webhooks.hub import (
    CLOSE_ACCOUNT_DELETED,
    api_key_group,
    hub_credential_check,
    hub_owner_disconnect,
    jwt_group,
)
from webhooks.services import owner_subscriptions_delete


def end_on_account_closing(sender: Any, *, user: User, **kwargs: Any) -> None:
    """An account is being deleted (inside its transaction): its subscriptions go with
    their deliveries, and once committed its hub connections are closed (4410)."""
    owner_subscriptions_delete(owner=user)
    transaction.on_commit(
        partial(hub_owner_disconnect, owner_id=user.pk, code=CLOSE_ACCOUNT_DELETED, reason="account_deleted")
    )


def end_on_api_key_revoked(sender: Any, *, key: ApiKey, **kwargs: Any) -> None:
    """An API key was revoked (inside its transaction): once committed, the hub
    connections opened with it check it again, and so close (4401 api_key_revoked)."""
    transaction.on_commit(partial(hub_credential_check, group=api_key_group(key.pk)))


def end_on_password_changed(sender: Any, *, user: User, **kwargs: Any) -> None:
    """The password changed (inside its transaction), voiding every JWT issued before:
    once committed, the account's JWT connections check theirs again, and those of an
    older token close (4401 token_revoked)."""
    transaction.on_commit(partial(hub_credential_check, group=jwt_group(user.pk)))
