"""`manage.py create_dev_user`: a development account with a password, a JWT and an API key.

Only on development deployments (DEVELOPMENT_DEPLOYMENT, on by default with DEBUG). Once
the wallet exists, the account also gets development credit.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.api_keys import api_key_create
from accounts.services import dev_user_ensure, token_issue
from core.errors import ServiceError


class Command(BaseCommand):
    help = "Create (or reset) a development account and print a JWT and a new API key for it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="dev@example.com")
        parser.add_argument("--password", default="dev-password-please-change")
        parser.add_argument("--staff", action="store_true", help="Also let the account into the admin.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user = dev_user_ensure(email=options["email"], password=options["password"], staff=options["staff"])
        except ServiceError as error:
            raise CommandError(error.detail) from None
        _, secret = api_key_create(
            user=user, name="development", scopes=["projects:write", "approve"], expires_in_days=30
        )
        token = token_issue(user=user)
        base = settings.PUBLIC_BASE_URL
        self.stdout.write(
            f"Development account: {user.email} / {options['password']}\n"
            f"JWT (12 hours):  {token.token}\n"
            f"API key (shown once, 30 days): {secret}\n\n"
            f"Try:  curl -H 'X-Api-Key: {secret}' {base}/v1/me\n"
        )
