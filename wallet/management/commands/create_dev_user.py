"""`manage.py create_dev_user`: a development account with a password, a JWT, an API key
and development credit in its wallet.

Only on development deployments (DEVELOPMENT_DEPLOYMENT, on by default with DEBUG). It
lives in the wallet app because it uses both accounts and the wallet (the layering points
accounts <- wallet). The credit is granted once per account: running it again adds none.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services.api_keys import api_key_create
from accounts.services.users import dev_user_ensure, token_issue
from core.errors import ServiceError
from wallet.models import CauseType, EntryKind
from wallet.selectors.wallet import wallet_view_for
from wallet.services.ledger import money_quantize, wallet_credit


class Command(BaseCommand):
    help = "Create (or reset) a development account and print a JWT and a new API key for it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="dev@example.com")
        parser.add_argument("--password", default="dev-password-please-change")
        parser.add_argument("--staff", action="store_true", help="Also let the account into the admin.")
        parser.add_argument("--credit", default="100", help="Development credit in USD, granted once (default 100).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user = dev_user_ensure(email=options["email"], password=options["password"], staff=options["staff"])
        except ServiceError as error:
            raise CommandError(error.detail) from None
        _, secret = api_key_create(
            user=user, name="development", scopes=["projects:write", "approve"], expires_in_days=30
        )
        wallet_credit(
            user=user,
            amount=money_quantize(value=options["credit"], field="credit"),
            kind=EntryKind.ADJUSTMENT,
            cause_type=CauseType.OPERATOR,
            cause_id=f"development-credit:{user.pk}",
            memo="development credit (create_dev_user)",
        )
        token = token_issue(user=user)
        base = settings.PUBLIC_BASE_URL
        self.stdout.write(
            f"Development account: {user.email} / {options['password']}\n"
            f"JWT (12 hours):  {token.token}\n"
            f"API key (shown once, 30 days): {secret}\n"
            f"Wallet: {wallet_view_for(user=user).spendable} USD spendable (development credit, granted once)\n\n"
            f"Try:  curl -H 'X-Api-Key: {secret}' {base}/v1/me\n"
        )
