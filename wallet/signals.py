"""The wallet's one outward hook.

`credit_landed` is sent (after the commit) whenever new credit reaches a wallet: a
confirmed top-up, a redeemed code, a refund, an operator's adjustment. Processing connects
to it to resume the owner's books paused for credit, so the wallet never imports the
projects app. Receivers get `user_id` and `amount` (Decimal) as keyword arguments and must
be idempotent: a resume that finds nothing to resume does nothing.
"""

from django.dispatch import Signal

credit_landed = Signal()
