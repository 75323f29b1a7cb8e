"""What accounts tell the apps above them, through core's event bus (core/events.py), so
accounts never imports them.

- `AccountClosing`: an account is being deleted (accounts.services.users.account_delete),
  published inside the deletion's transaction with the locked `user`. Each app ends what it
  holds for the account in an in-transaction handler: projects (every book with its files, a
  batch in flight with its hold resolved; unadopted uploads), wallet (refuses with 409
  top_up_in_flight while a top-up may still credit; forgets saved cards and billing
  preferences, keeps the ledger), webhooks (subscriptions removed; hub connections closed
  once committed). A handler that raises refuses the deletion: the transaction rolls back
  and nothing changes. Files and hub closes wait for the commit.
- `ApiKeyRevoked`: an API key was revoked (accounts.services.api_keys.api_key_revoke), again when
  revoked again. After the commit, the hub checks the sockets opened with it.
- `PasswordChanged`: an account's password changed (accounts.services.users.password_change), so
  every JWT issued before is void. After the commit, the hub checks the account's sockets.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from accounts.models import User
from core.events import DomainEvent


@dataclass(frozen=True)
class AccountClosing(DomainEvent):
    user: User


@dataclass(frozen=True)
class ApiKeyRevoked(DomainEvent):
    key_id: uuid.UUID
    user_id: uuid.UUID


@dataclass(frozen=True)
class PasswordChanged(DomainEvent):
    user_id: uuid.UUID
