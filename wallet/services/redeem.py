"""Credit codes: operators issue batches of them, owners redeem one for instant credit.

A code is `BTS-XXXX-XXXX-XXXX-XXXX`: 16 characters of Crockford base32 drawn with
`secrets` (80 bits). Only the SHA-256 of its normalized form is stored, with the last four
characters as a hint for support, so the plaintext exists once: in what `codes_issue`
returns (the admin's CSV download, the `issue_codes` command's output).

A redeem locks the code row, then (through `wallet_credit`) the owner's wallet row: two
redeems of one code queue on the first lock, and the second finds it used. The ledger's
one-credit-per-cause constraint on (redeem_credit, code, code id) backs this up.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import secrets
from datetime import UTC, datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from core.errors import IdempotencyKeyReused, ValidationFailed
from core.events import publish
from wallet.errors import RedeemCodeExpired, RedeemCodeUnknown, RedeemCodeUsed, RedeemCodeVoid
from wallet.events import TopUpConfirmed
from wallet.models import CauseType, EntryKind, RedeemBatch, RedeemCode, TopUp, TopUpMethod, TopUpStatus
from wallet.services.ledger import money_quantize, wallet_credit
from wallet.services.topups import reference_new

logger = logging.getLogger(__name__)

CODE_PREFIX = "BTS"
CODE_BODY_LENGTH = 16  # x 5 bits = 80 bits of entropy
CODE_GROUP = 4
HINT_LENGTH = 4
# Crockford's base32: no I, L, O or U, so nothing reads as another character.
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# What a person may type for what they read (Crockford's decoding rules).
_MISREAD = str.maketrans({"O": "0", "I": "1", "L": "1"})
_SEPARATORS = str.maketrans("", "", "- \t\r\n")
MAX_CODES_PER_BATCH = 10_000
CSV_HEADER = ["code", "amount", "currency", "expires_utc", "batch"]


def code_normalize(code: str) -> str:
    """The canonical form that is hashed: upper case, no hyphens or spaces, Crockford's
    look-alikes mapped (O -> 0, I and L -> 1), the BTS prefix added if it was left off.
    Returns "" for something that cannot be a code."""
    text = code.upper().translate(_SEPARATORS)
    if len(text) == len(CODE_PREFIX) + CODE_BODY_LENGTH and text.startswith(CODE_PREFIX):
        text = text[len(CODE_PREFIX) :]
    body = text.translate(_MISREAD)
    if len(body) != CODE_BODY_LENGTH or any(character not in ALPHABET for character in body):
        return ""
    return CODE_PREFIX + body


def code_hash(normalized: str) -> str:
    """SHA-256 of a normalized code: 80 random bits need no salt or slow hash."""
    return hashlib.sha256(normalized.encode("ascii")).hexdigest()


def _code_new() -> str:
    body = "".join(secrets.choice(ALPHABET) for _ in range(CODE_BODY_LENGTH))
    groups = [body[start : start + CODE_GROUP] for start in range(0, CODE_BODY_LENGTH, CODE_GROUP)]
    return "-".join([CODE_PREFIX, *groups])


def _count_clean(count: int) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_CODES_PER_BATCH:
        raise ValidationFailed({"count": [f"Between 1 and {MAX_CODES_PER_BATCH} codes a batch."]})
    return count


def _amount_clean(amount: Decimal | int | str) -> Decimal:
    value = money_quantize(value=amount)
    ceiling = Decimal(settings.TOP_UP_MAX_USD)
    if value > ceiling:
        raise ValidationFailed({"amount": [f"A code is worth at most {ceiling} USD (TOP_UP_MAX_USD)."]})
    return value


def codes_issue(
    *,
    amount: Decimal | int | str,
    count: int,
    expires_at: datetime | None = None,
    note: str = "",
    operator: User | None,
) -> tuple[RedeemBatch, list[str]]:
    """Creates a batch of `count` codes worth `amount` USD each, in one transaction, and
    returns the batch with the plaintext codes: the only time they exist. Refuses a count
    outside 1..10,000, an amount that is not positive money up to TOP_UP_MAX_USD, and an
    expiry that is naive or already past (validation_error)."""
    value = _amount_clean(amount)
    count = _count_clean(count)
    if expires_at is not None and (timezone.is_naive(expires_at) or expires_at <= timezone.now()):
        raise ValidationFailed({"expiresAt": ["Give a time zone-aware expiry in the future."]})
    codes: set[str] = set()
    while len(codes) < count:
        codes.add(_code_new())
    plaintext = sorted(codes)
    with transaction.atomic():
        batch = RedeemBatch.objects.create(
            amount=value, count=count, expires_at=expires_at, note=note[:255], created_by=operator
        )
        RedeemCode.objects.bulk_create(
            [
                RedeemCode(batch=batch, code_hash=code_hash(code_normalize(code)), hint=code[-HINT_LENGTH:])
                for code in plaintext
            ],
            batch_size=1000,
        )
    logger.info("redeem batch %s issued: %s codes of %s USD by %s", batch.pk, count, value, _who(operator))
    return batch, plaintext


def codes_csv(*, batch: RedeemBatch, codes: list[str]) -> str:
    """The codes of a batch as CSV (code, amount, currency, expires_utc, batch), one row
    each, with a header."""
    amount = f"{batch.amount.normalize():f}"
    expires = batch.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if batch.expires_at else ""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows([code, amount, "USD", expires, batch.pk] for code in codes)
    return out.getvalue()


def _refuse(code: RedeemCode) -> None:
    """Raises the reason this (locked) code cannot be redeemed now, if there is one."""
    if code.redeemed_at is not None:
        raise RedeemCodeUsed("This code has already been redeemed.")
    batch = code.batch
    if code.voided_at is not None or batch.voided_at is not None:
        raise RedeemCodeVoid("This code was withdrawn by the issuer.")
    if batch.expires_at is not None and batch.expires_at <= timezone.now():
        raise RedeemCodeExpired("This code has expired.")


def code_redeem(*, user: User, code: str, client_key: str | None = None) -> TopUp:
    """Redeems a code for its batch's amount and returns the confirmed top-up that records
    it. Exactly once per code, whoever tries: the code row is locked, marked redeemed,
    credited (redeem_credit, cause (code, id)) and recorded in one transaction. Refuses with
    400 redeem_code_unknown, redeem_code_used, redeem_code_void or redeem_code_expired,
    changing nothing. `client_key` (the request's Idempotency-Key) is kept on the top-up:
    the redeemer's retry with it (its answer lost in a crash) gets that top-up back, not
    redeem_code_used; the key already naming another top-up is 422 idempotency_key_reused."""
    normalized = code_normalize(code)
    if not normalized:
        raise RedeemCodeUnknown("No such code.")
    with transaction.atomic():
        found = (
            RedeemCode.objects.select_for_update(of=("self",))
            .select_related("batch")
            .filter(code_hash=code_hash(normalized))
            .first()
        )
        if found is None:
            raise RedeemCodeUnknown("No such code.")
        named = TopUp.objects.filter(user=user, client_key=client_key).first() if client_key else None
        if named is not None:
            if named.provider_reference != f"redeem_code:{found.pk}":
                raise IdempotencyKeyReused()
            return named
        _refuse(found)
        now = timezone.now()
        found.redeemed_by = user
        found.redeemed_at = now
        found.save(update_fields=["redeemed_by", "redeemed_at"])
        amount = found.batch.amount
        entry = wallet_credit(
            user=user,
            amount=amount,
            kind=EntryKind.REDEEM_CREDIT,
            cause_type=CauseType.CODE,
            cause_id=str(found.pk),
            memo=f"code …{found.hint} (batch {found.batch_id})",
        )
        top_up = TopUp.objects.create(
            reference=reference_new(),
            user=user,
            method=TopUpMethod.MANUAL,
            amount=amount,
            status=TopUpStatus.CONFIRMED,
            credited_amount=amount,
            ledger_entry=entry,
            provider_reference=f"redeem_code:{found.pk}",
            client_key=client_key or "",
            message=f"Code …{found.hint} redeemed: {amount.normalize():f} USD credited.",
            created_at=now,
            updated_at=now,
            resolved_at=now,
        )
        publish(TopUpConfirmed(top_up_id=top_up.pk, owner_id=user.pk))
    logger.info("redeem code %s (…%s) redeemed by user %s", found.pk, found.hint, user.pk)
    return top_up


def batch_void(*, batch: RedeemBatch, operator: User | None) -> int:
    """Withdraws every unredeemed code of the batch (and the batch itself, so none can be
    redeemed later); redeemed codes and their credit stand. Returns how many codes this
    call voided; voiding a void batch again changes nothing."""
    with transaction.atomic():
        locked = RedeemBatch.objects.select_for_update().get(pk=batch.pk)
        now = timezone.now()
        # A code being redeemed right now holds its row lock; the update waits for it and
        # then skips it, because it is no longer unredeemed.
        voided = RedeemCode.objects.filter(batch=locked, redeemed_at__isnull=True, voided_at__isnull=True).update(
            voided_at=now
        )
        if locked.voided_at is None:
            locked.voided_at = now
            locked.save(update_fields=["voided_at"])
    batch.voided_at = locked.voided_at
    logger.info("redeem batch %s voided (%s codes) by %s", batch.pk, voided, _who(operator))
    return voided


def _who(operator: User | None) -> str:
    return operator.email if operator is not None else "a command"
