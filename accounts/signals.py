"""The accounts app's outward hook, so that accounts never imports the apps above it (as
wallet/signals.py does for credit).

- `account_closing`: an account is being deleted (accounts.services.account_delete),
  sent inside the deletion's transaction with `user` (locked). Each app ends what it
  holds for the account: projects (every book with its files, a batch in flight with its
  hold resolved; unadopted uploads), wallet (refuses with 409 top_up_in_flight while a
  top-up may still credit; forgets saved cards and billing preferences, keeps the
  ledger), webhooks (subscriptions removed; hub connections closed once committed).

A receiver that raises refuses the deletion: the transaction rolls back and nothing
changes. Files and hub closes wait for the commit.
"""

from django.dispatch import Signal

account_closing = Signal()
