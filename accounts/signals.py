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

- `api_key_revoked`: an API key was revoked (accounts.api_keys.api_key_revoke), sent
  inside the revocation's transaction with `key` (again when revoked again).
- `password_changed`: an account's password changed, so every JWT issued before is void
  (accounts.services.password_change), sent inside its transaction with `user`.

The hub (webhooks/receivers.py) closes the sockets that held the credential once committed.
"""

from django.dispatch import Signal

account_closing = Signal()
api_key_revoked = Signal()
password_changed = Signal()
