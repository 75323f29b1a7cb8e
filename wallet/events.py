"""What the wallet tells the apps above it (and its own alerts), through core's event bus
(core/events.py); published inside the transaction that made the change, handled after it
commits.

- `CreditLanded`: new credit reached a wallet (a confirmed top-up, a redeemed code, a refund,
  an operator's credit). Processing resumes the owner's books paused for credit.
- `SpendingRoomGrew`: without new credit, batches the owner could not start may now start:
  a hold was released or settled below its amount (spendable credit rose), the monthly
  spending ceiling was raised or removed, a new calendar month began (the ceiling's month),
  or the wallet became unlimited. Processing resumes as for credit.
- `BalanceFell`: a debit (a hold, a charge) or a change of the alert settings: the wallet's
  alerts look whether the low-balance email or an auto top-up is due.
- `TopUpConfirmed`: a top-up (a redeemed code included) was credited: webhooks and the hub
  send wallet.top_up_confirmed.
- `LowBalance`: the low-balance email went out: webhooks and the hub send wallet.low_balance.

Handlers must be idempotent: a resume that finds nothing to resume does nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal

from core.events import DomainEvent


@dataclass(frozen=True)
class CreditLanded(DomainEvent):
    user_id: uuid.UUID
    amount: Decimal


@dataclass(frozen=True)
class SpendingRoomGrew(DomainEvent):
    user_id: uuid.UUID


@dataclass(frozen=True)
class BalanceFell(DomainEvent):
    wallet_id: int


@dataclass(frozen=True)
class TopUpConfirmed(DomainEvent):
    top_up_id: uuid.UUID
    owner_id: uuid.UUID


@dataclass(frozen=True)
class LowBalance(DomainEvent):
    owner_id: uuid.UUID
