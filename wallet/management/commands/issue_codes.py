"""`manage.py issue_codes --amount 25 --count 100 [--expires-days 90] [--note ...]
[--operator EMAIL] [--output codes.csv]`: issues a batch of credit codes and writes their
CSV (code, amount, currency, expires_utc, batch) to stdout or a new file. The output is
the only copy of the codes: only their hashes are stored.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.models import User
from core.errors import ServiceError, ValidationFailed
from wallet.services.redeem import codes_csv, codes_issue


class Command(BaseCommand):
    help = "Issue a batch of credit codes and write their CSV (the only copy of the codes)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--amount", required=True, help="USD each code credits.")
        parser.add_argument("--count", required=True, type=int, help="How many codes (1 to 10,000).")
        parser.add_argument(
            "--expires-days", type=int, default=None, help="Days until the codes expire (default never)."
        )
        parser.add_argument("--note", default="", help="What the batch is for.")
        parser.add_argument("--operator", default=None, help="Email of the staff account issuing them (recorded).")
        parser.add_argument(
            "--output", default=None, help="Write the CSV to this new file (mode 600) instead of stdout."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        expires_days = options["expires_days"]
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1.")
        operator = None
        if options["operator"]:
            operator = User.objects.filter(email__iexact=options["operator"], is_staff=True).first()
            if operator is None:
                raise CommandError(f"No staff account has the email {options['operator']}.")
        output = options["output"]
        if output and os.path.exists(output):
            raise CommandError(f"{output} exists; codes are never written over another file.")
        try:
            batch, codes = codes_issue(
                amount=options["amount"],
                count=options["count"],
                expires_at=timezone.now() + timedelta(days=expires_days) if expires_days else None,
                note=options["note"],
                operator=operator,
            )
        except ValidationFailed as error:
            problems = "; ".join(f"{field}: {' '.join(texts)}" for field, texts in error.extra["errors"].items())
            raise CommandError(problems) from None
        except ServiceError as error:
            raise CommandError(error.detail) from None
        text = codes_csv(batch=batch, codes=codes)
        if output:
            descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
                file.write(text)
            self.stderr.write(f"Issued {len(codes)} codes (batch {batch.pk}) to {output}.")
        else:
            self.stdout.write(text, ending="")
