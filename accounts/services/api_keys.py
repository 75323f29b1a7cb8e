"""Scoped API keys: minting, verifying and revoking.

A secret is `svc_sk_live_` + 43 base62 characters (256 random bits) + a 6-character
base62 CRC32 checksum of them, in the manner of GitHub's tokens: a scanner can recognise
a leaked key, and a mistyped key is rejected as malformed without a database lookup.
Only the SHA-256 of the secret and a non-secret prefix are stored.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import zlib
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts import errors
from accounts.events import ApiKeyRevoked
from accounts.models import ApiKey, Scope, User
from core.errors import ValidationFailed
from core.events import publish

SECRET_PREFIX = "svc_sk_live_"  # noqa: S105  (a public prefix, not a secret)
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_RANDOM_LENGTH = 43
_CHECKSUM_LENGTH = 6
SECRET_LENGTH = len(SECRET_PREFIX) + _RANDOM_LENGTH + _CHECKSUM_LENGTH
_DISPLAY_PREFIX_LENGTH = len(SECRET_PREFIX) + 8

ALL_SCOPES = frozenset(Scope.values)
DEFAULT_SCOPES = [Scope.PROJECTS_WRITE.value]


def _base62(number: int, width: int) -> str:
    digits = []
    while number:
        number, remainder = divmod(number, 62)
        digits.append(_ALPHABET[remainder])
    return "".join(reversed(digits)).rjust(width, "0")


def _checksum(random_part: str) -> str:
    return _base62(zlib.crc32(random_part.encode()), _CHECKSUM_LENGTH)


def secret_generate() -> str:
    random_part = "".join(secrets.choice(_ALPHABET) for _ in range(_RANDOM_LENGTH))
    return SECRET_PREFIX + random_part + _checksum(random_part)


def secret_is_well_formed(secret: str) -> bool:
    if len(secret) != SECRET_LENGTH or not secret.startswith(SECRET_PREFIX):
        return False
    body = secret[len(SECRET_PREFIX) :]
    if any(char not in _ALPHABET for char in body):
        return False
    random_part, checksum = body[:_RANDOM_LENGTH], body[_RANDOM_LENGTH:]
    return hmac.compare_digest(_checksum(random_part), checksum)


def looks_like_api_key(credential: str) -> bool:
    """True for anything in the key family (well formed or not), to route it here."""
    return credential.startswith("svc_sk_")


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def display_prefix(secret: str) -> str:
    return secret[:_DISPLAY_PREFIX_LENGTH]


def scopes_implied(scopes: Iterable[str]) -> frozenset[str]:
    """The scopes a key holds, with what they imply: projects:write includes projects:read."""
    held = set(scopes)
    if Scope.PROJECTS_WRITE in held:
        held.add(Scope.PROJECTS_READ)
    return frozenset(held)


def _scopes_validate(scopes: Iterable[str]) -> list[str]:
    requested = list(dict.fromkeys(scopes))
    unknown = [scope for scope in requested if scope not in ALL_SCOPES]
    if unknown:
        raise ValidationFailed({"scopes": [f"Unknown scope: {scope}." for scope in unknown]})
    if not requested:
        raise ValidationFailed({"scopes": ["At least one scope is required."]})
    return requested


def _expiry_check_within(*, creator: ApiKey, expires_at: datetime | None, now: datetime) -> None:
    """Refuse (403 expiry_not_held) a key that would outlive the key creating it."""
    if creator.expires_at is None or (expires_at is not None and expires_at <= creator.expires_at):
        return
    whole_days_left = (creator.expires_at - now) // timedelta(days=1)
    raise errors.ExpiryNotHeld(
        "This API key cannot create a key that outlives it: it expires at "
        f"{creator.expires_at.isoformat()}, so expiresInDays must be at most {whole_days_left}"
        + (" (less than a day is left, so it cannot create keys)." if whole_days_left < 1 else "."),
        key_expires_utc=creator.expires_at,
        max_expires_in_days=whole_days_left,
    )


def api_key_create(
    *,
    user: User,
    name: str,
    scopes: Iterable[str] | None = None,
    expires_in_days: int | None = None,
    created_with: ApiKey | None = None,
) -> tuple[ApiKey, str]:
    """Mint a key; the raw secret is returned once and never stored.

    A key created while authenticated with another key cannot hold scopes that key lacks,
    nor outlive it: when that key expires, the new one must expire no later (a key
    without expiry may be minted only by a JWT or a key without expiry).
    """
    granted = _scopes_validate(DEFAULT_SCOPES if scopes is None else scopes)
    if created_with is not None:
        held = scopes_implied(created_with.scopes)
        missing = [scope for scope in granted if scope not in held]
        if missing:
            raise errors.ScopeNotHeld(
                f"This API key cannot grant scopes it does not hold: {', '.join(missing)}.",
                missing_scopes=missing,
            )
    if expires_in_days is not None and not 1 <= expires_in_days <= settings.API_KEY_MAX_EXPIRY_DAYS:
        raise ValidationFailed({"expiresInDays": [f"Must be between 1 and {settings.API_KEY_MAX_EXPIRY_DAYS}."]})
    now = timezone.now()
    expires_at = now + timedelta(days=expires_in_days) if expires_in_days else None
    if created_with is not None:
        _expiry_check_within(creator=created_with, expires_at=expires_at, now=now)
    secret = secret_generate()
    key = ApiKey.objects.create(
        user=user,
        name=name,
        prefix=display_prefix(secret),
        secret_hash=secret_hash(secret),
        scopes=granted,
        created_at=now,
        expires_at=expires_at,
    )
    return key, secret


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Revoke at once. Idempotent: revoking a revoked key keeps its first revocation time.
    Every call announces it (accounts.events.ApiKeyRevoked), so revoking again also
    closes hub sockets that a lost first announcement left open."""
    with transaction.atomic():
        key = ApiKey.objects.select_for_update().get(pk=key.pk)
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
        publish(ApiKeyRevoked(key_id=key.pk, user_id=key.user_id))
    return key


def api_key_authenticate(*, secret: str) -> ApiKey:
    """The key this secret belongs to, if it may be used now; else a CredentialRejected (accounts.errors) saying why."""
    if not secret_is_well_formed(secret):
        raise errors.CredentialMalformed("The API key is malformed.")
    digest = secret_hash(secret)
    candidates = ApiKey.objects.select_related("user").filter(prefix=display_prefix(secret))
    key = next((c for c in candidates if hmac.compare_digest(c.secret_hash, digest)), None)
    if key is None:
        raise errors.ApiKeyUnknown("No such API key.")
    if key.revoked_at is not None:
        raise errors.ApiKeyRevoked("The API key was revoked.")
    if key.is_expired():
        raise errors.ApiKeyExpired("The API key has expired.")
    if not key.user.is_active:
        raise errors.AccountDisabled("The account is disabled.")
    api_key_touch(key=key)
    return key


def api_key_touch(*, key: ApiKey) -> None:
    """Record use, writing at most once per API_KEY_LAST_USED_RESOLUTION_SECONDS."""
    now = timezone.now()
    resolution = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION_SECONDS)
    if key.last_used_at is not None and now - key.last_used_at < resolution:
        return
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    key.last_used_at = now
