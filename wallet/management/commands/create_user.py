"""`manage.py create_user EMAIL --credit 50`: an operator creates an account with credit.

The password is read from `--password` or, when omitted, generated and printed once. The
credit is an operator `adjustment` on the ledger naming the operator (`--operator`, an
existing staff account's email, or "manage.py")."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import User
from accounts.services.users import user_register
from core.errors import ServiceError
from wallet.models import CauseType, EntryKind
from wallet.services.ledger import money_quantize, wallet_credit, wallet_unlimited_set


class Command(BaseCommand):
    help = "Create an account (optionally staff, unlimited, or with credit)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("--password", help="Omitted: a random one is generated and printed once.")
        parser.add_argument("--name", default="", help="Display name.")
        parser.add_argument("--credit", default="0", help="USD credited to the wallet (an operator adjustment).")
        parser.add_argument("--staff", action="store_true", help="Let the account into the admin.")
        parser.add_argument("--unlimited", action="store_true", help="Whitelist it: never held or charged.")
        parser.add_argument("--operator", default="manage.py", help="Who gives the credit (for the ledger's memo).")

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"] or secrets.token_urlsafe(18)
        credit = money_quantize(value=options["credit"], field="credit", allow_zero=True)
        try:
            with transaction.atomic():
                user = user_register(email=options["email"], password=password, display_name=options["name"])
                if options["staff"]:
                    User.objects.filter(pk=user.pk).update(is_staff=True)
                if options["unlimited"]:
                    wallet_unlimited_set(user=user, unlimited=True, operator=None)
                if credit > 0:
                    wallet_credit(
                        user=user,
                        amount=credit,
                        kind=EntryKind.ADJUSTMENT,
                        cause_type=CauseType.OPERATOR,
                        cause_id=f"create_user:{uuid.uuid4()}",
                        memo=f"opening credit (by {options['operator']})",
                    )
        except ServiceError as error:
            raise CommandError(f"{error.detail} {error.extra.get('errors', '')}".strip()) from None
        self.stdout.write(f"Created {user.email} (id {user.pk}).")
        if not options["password"]:
            self.stdout.write(f"Password (shown once): {password}")
        if credit > 0:
            self.stdout.write(f"Credited {credit} USD.")
