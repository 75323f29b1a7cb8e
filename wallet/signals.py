"""The wallet's outward hooks (sent after the commit), so the wallet never imports the
projects app. Processing connects to both to resume the owner's books paused for credit.

- `credit_landed`: new credit reached a wallet (a confirmed top-up, a redeemed code, a
  refund, an operator's credit). Receivers get `user_id` and `amount` (Decimal).
- `spending_room_grew`: without new credit, batches the owner could not start may now
  start: a hold was released or settled below its amount (spendable credit rose), the
  monthly spending ceiling was raised or removed, a new calendar month began (the
  ceiling's month), or the wallet became unlimited. Receivers get `user_id`.

Receivers take keyword arguments and must be idempotent: a resume that finds nothing to
resume does nothing.
"""

from django.dispatch import Signal

credit_landed = Signal()
spending_room_grew = Signal()
