"""Signing secrets and Standard Webhooks signatures.

A secret is `whsec_` + base64 of 32 random bytes; the HMAC key is those bytes. Secrets must
be readable to sign, so they are stored encrypted (Fernet, AES-128-CBC + HMAC-SHA256) with a
key derived from WEBHOOK_SECRET_KEY, or SECRET_KEY when that is empty; older keys in
WEBHOOK_SECRET_KEY_FALLBACKS still decrypt, so the key can be rotated. A secret is never
logged: only its prefix (`whsec_` and four characters) is shown after creation.

The signature (https://www.standardwebhooks.com): `webhook-signature: v1,<base64 of
HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">`, the timestamp in whole Unix
seconds of the attempt (receivers refuse ones over five minutes off).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets
from datetime import datetime

from cryptography.fernet import Fernet, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

SECRET_PREFIX = "whsec_"  # noqa: S105  (the marker every secret starts with, not a secret)
SECRET_BYTES = 32
SHOWN_PREFIX_LENGTH = len(SECRET_PREFIX) + 4
_KEY_INFO = b"booktranslate webhook signing secrets v1"


def secret_new() -> str:
    """A fresh signing secret, `whsec_` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_prefix(secret: str) -> str:
    """The non-secret part shown in lists, for recognition."""
    return secret[:SHOWN_PREFIX_LENGTH]


def secret_key_bytes(secret: str) -> bytes:
    """The HMAC key: the base64-decoded part after `whsec_`."""
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def secret_encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode("ascii")).decode("ascii")


def secret_decrypt(token: str) -> str:
    """The secret; cryptography's InvalidToken when no configured key opens it."""
    return _fernet().decrypt(token.encode("ascii")).decode("ascii")


def signature(*, secret: str, message_id: str, timestamp: datetime, body: bytes) -> str:
    """The `webhook-signature` header value for this message."""
    signed = f"{message_id}.{int(timestamp.timestamp())}.".encode() + body
    digest = hmac.new(secret_key_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(*, secret: str, message_id: str, timestamp: datetime, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature(secret=secret, message_id=message_id, timestamp=timestamp, body=body),
    }


def _fernet() -> MultiFernet:
    primary = settings.WEBHOOK_SECRET_KEY or settings.SECRET_KEY
    return _fernet_for(tuple([primary, *settings.WEBHOOK_SECRET_KEY_FALLBACKS]))


@functools.lru_cache(maxsize=4)
def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    """The first key encrypts; every key decrypts."""
    return MultiFernet([Fernet(_derive(key)) for key in keys])


def _derive(key: str) -> bytes:
    """A Fernet key from a setting of any length (HKDF-SHA256, bound to this use)."""
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_KEY_INFO).derive(key.encode())
    return base64.urlsafe_b64encode(derived)
