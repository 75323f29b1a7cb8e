"""Sign-in with an OpenID Connect ID token from an external identity provider.

`id_token_verify` checks a token against the provider's published signing keys (JWKS,
fetched and cached per provider) and its configured issuers and client ids;
`identity_sign_in` turns a verified token into an account: the one already linked to the
identity, an existing account with the same provider-verified email, or a new account
without a password.
"""

from __future__ import annotations

import hmac
import logging
import threading
from dataclasses import dataclass
from typing import Any

import jwt
from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from jwt import PyJWK, PyJWKClient
from jwt.exceptions import PyJWKClientConnectionError, PyJWKClientError, PyJWKSetError

from accounts.errors import AccountDisabled, EmailTaken, IdentityTokenInvalid, ProviderUnavailable, ProviderUnknown
from accounts.models import ExternalIdentity, User, email_normalize
from core.errors import Conflict

logger = logging.getLogger(__name__)

# Asymmetric algorithms only: `none` and the HMAC family (whose "secret" would be the
# provider's public key) are refused before any key is looked up.
ALLOWED_ALGORITHMS = ("RS256", "ES256")
REQUIRED_CLAIMS = ["iss", "aud", "sub", "exp", "iat"]
JWKS_USER_AGENT = "book-translation-service/1 (OpenID Connect key fetch)"
SUBJECT_MAX_LENGTH = ExternalIdentity._meta.get_field("subject").max_length or 255
DISPLAY_NAME_MAX_LENGTH = User._meta.get_field("display_name").max_length or 150


@dataclass(frozen=True)
class Provider:
    """An identity provider as configured in settings.OIDC_PROVIDERS."""

    name: str
    issuers: tuple[str, ...]
    jwks_url: str
    client_ids: tuple[str, ...]


@dataclass(frozen=True)
class VerifiedIdentity:
    """The claims of an ID token that passed every check, in the forms we store."""

    provider: str
    subject: str
    email: str | None
    email_verified: bool
    name: str | None


def provider_get(*, name: str) -> Provider:
    """The configured provider of this name, or ProviderUnknown.

    A provider counts as configured only when it has issuers, a JWKS address and at
    least one client id.
    """
    key = name.strip().lower()
    config = settings.OIDC_PROVIDERS.get(key) or {}
    issuers = tuple(issuer for issuer in _as_list(config.get("issuers")) if issuer)
    client_ids = tuple(client_id for client_id in _as_list(config.get("client_ids")) if client_id)
    jwks_url = str(config.get("jwks_url") or "")
    if not (issuers and client_ids and jwks_url):
        raise ProviderUnknown(f"No identity provider named {name!r} is configured here.")
    return Provider(name=key, issuers=issuers, jwks_url=jwks_url, client_ids=client_ids)


def _as_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return []


# --- Signing keys -------------------------------------------------------------------------

_jwks_clients: dict[tuple[str, float, float, float], PyJWKClient] = {}
_jwks_clients_lock = threading.Lock()

# What fetching a key set can raise: no connection, timeout, HTTP error status (all
# PyJWKClientConnectionError), a body that is not JSON (ValueError), not a JSON object or
# without signing keys (PyJWKClientError), no usable key (PyJWKSetError), or a connection
# dropped while reading (OSError).
_FETCH_ERRORS = (PyJWKClientError, PyJWKSetError, ValueError, OSError)


def jwks_cache_clear() -> None:
    """Forget every fetched key set; the next verification for each provider fetches afresh."""
    with _jwks_clients_lock:
        _jwks_clients.clear()


def _jwks_client(provider: Provider) -> PyJWKClient:
    """One client per key-set address and settings, so its cache outlives the request."""
    lifespan = float(settings.OIDC_JWKS_CACHE_SECONDS)
    timeout = float(settings.OIDC_HTTP_TIMEOUT_SECONDS)
    cooldown = float(settings.OIDC_JWKS_REFRESH_COOLDOWN_SECONDS)
    cache_key = (provider.jwks_url, lifespan, timeout, cooldown)
    with _jwks_clients_lock:
        client = _jwks_clients.get(cache_key)
        if client is None:
            try:
                client = PyJWKClient(
                    provider.jwks_url,
                    cache_jwk_set=True,
                    lifespan=lifespan,
                    timeout=timeout,
                    cooldown_duration=cooldown,
                    headers={"User-Agent": JWKS_USER_AGENT},
                )
            except PyJWKClientError as error:
                logger.error("Identity provider %s is misconfigured: %s", provider.name, error)
                raise _unavailable(provider) from None
            _jwks_clients[cache_key] = client
    return client


def _unavailable(provider: Provider) -> ProviderUnavailable:
    return ProviderUnavailable(f"The signing keys of {provider.name} could not be fetched; retry later.")


def _signing_key(provider: Provider, kid: str) -> PyJWK:
    """The provider's published key with this id. An id missing from the cached key set
    causes one refetch (the provider rotated its keys), at most once per cooldown."""
    client = _jwks_client(provider)
    try:
        client.get_signing_keys()  # from the cache, or fetched when missing or expired
    except _FETCH_ERRORS as error:
        logger.warning("Fetching the keys of %s from %s failed: %s", provider.name, provider.jwks_url, error)
        raise _unavailable(provider) from None
    try:
        return client.get_signing_key(kid)
    except PyJWKClientConnectionError as error:
        logger.warning("Refetching the keys of %s from %s failed: %s", provider.name, provider.jwks_url, error)
        raise _unavailable(provider) from None
    except PyJWKClientError:
        raise IdentityTokenInvalid(
            f"The identity token is signed with a key (kid) that {provider.name} does not publish."
        ) from None
    except (PyJWKSetError, ValueError, OSError) as error:
        logger.warning("Refetching the keys of %s from %s failed: %s", provider.name, provider.jwks_url, error)
        raise _unavailable(provider) from None


# --- Verification -------------------------------------------------------------------------

_REJECTION_DETAILS: list[tuple[type[jwt.PyJWTError], str]] = [
    (jwt.ExpiredSignatureError, "The identity token has expired; sign in with the provider again."),
    (jwt.ImmatureSignatureError, "The identity token is not valid yet (nbf or iat lies in the future)."),
    (jwt.InvalidAudienceError, "The identity token was issued for another application (aud)."),
    (jwt.InvalidIssuerError, "The identity token was not issued by this provider (iss)."),
    (jwt.InvalidAlgorithmError, "The identity token is signed with an algorithm that is not accepted."),
    (jwt.InvalidSignatureError, "The identity token's signature does not verify."),
]


def _rejection(error: jwt.PyJWTError) -> IdentityTokenInvalid:
    if isinstance(error, jwt.MissingRequiredClaimError):
        return IdentityTokenInvalid(f"The identity token lacks the required {error.claim!r} claim.")
    for error_class, detail in _REJECTION_DETAILS:
        if isinstance(error, error_class):
            return IdentityTokenInvalid(detail)
    return IdentityTokenInvalid("The identity token is malformed or its claims are invalid.")


def id_token_verify(*, provider: Provider, id_token: str, nonce: str | None = None) -> VerifiedIdentity:
    """The identity in the token, or IdentityTokenInvalid (ProviderUnavailable when the
    provider's keys cannot be fetched).

    Guarantees on success: signed with RS256 or ES256 by a key the provider publishes;
    issued by one of its issuers for one of its client ids only; within exp, nbf and iat
    (with settings.OIDC_LEEWAY_SECONDS of leeway); a non-empty subject; and, when `nonce`
    is given, a nonce claim equal to it.
    """
    try:
        header = jwt.get_unverified_header(id_token)
    except jwt.PyJWTError:
        raise IdentityTokenInvalid("The identity token is not a well-formed JWT.") from None
    if header.get("alg") not in ALLOWED_ALGORITHMS:
        raise IdentityTokenInvalid("The identity token is signed with an algorithm that is not accepted.")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise IdentityTokenInvalid("The identity token does not name its signing key (kid).")

    key = _signing_key(provider, kid)
    try:
        claims: dict[str, Any] = jwt.decode(
            id_token,
            key=key,
            algorithms=list(ALLOWED_ALGORITHMS),
            audience=list(provider.client_ids),
            issuer=list(provider.issuers),
            leeway=settings.OIDC_LEEWAY_SECONDS,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.PyJWTError as error:
        raise _rejection(error) from None

    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if not set(audiences) <= set(provider.client_ids):  # OIDC Core 3.1.3.7: no untrusted audiences
        raise IdentityTokenInvalid("The identity token is also addressed to applications this service does not trust.")
    subject = claims["sub"]
    if not isinstance(subject, str) or not subject.strip() or len(subject) > SUBJECT_MAX_LENGTH:
        raise IdentityTokenInvalid("The identity token's subject (sub) is empty or too long.")
    if nonce is not None:
        token_nonce = claims.get("nonce")
        if not isinstance(token_nonce, str) or not hmac.compare_digest(token_nonce.encode(), nonce.encode()):
            raise IdentityTokenInvalid("The identity token's nonce does not match the nonce sent.")

    return VerifiedIdentity(
        provider=provider.name,
        subject=subject,
        email=_claimed_email(claims.get("email")),
        email_verified=_is_true(claims.get("email_verified")),
        name=_claimed_name(claims.get("name")),
    )


def _claimed_email(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    email = email_normalize(value)
    try:
        validate_email(email)
    except DjangoValidationError:
        return None
    return email


def _is_true(value: object) -> bool:
    """Google sends email_verified as a JSON boolean, Apple as the string "true"."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _claimed_name(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:DISPLAY_NAME_MAX_LENGTH]


# --- Sign-in ------------------------------------------------------------------------------


def identity_sign_in(
    *, provider: str, id_token: str, nonce: str | None = None, display_name: str | None = None
) -> User:
    """The account for a verified ID token of this provider.

    - An identity signed in before: its account (the token need not carry an email).
    - Otherwise, a provider-verified email of an existing account whose email is verified
      too: that account, now linked to the identity. An existing account whose email was
      never verified is not linked (EmailTaken): its password may belong to someone who
      registered another person's address first.
    - Otherwise a new account without a password. An unverified email never links: if it
      belongs to another account the sign-in is refused (EmailTaken) and nothing is written.

    Safe under concurrent sign-ins with the same identity: exactly one account and one link
    result, and every caller gets that account. A disabled account raises AccountDisabled.
    """
    identity = id_token_verify(provider=provider_get(name=provider), id_token=id_token, nonce=nonce)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                return _identity_resolve(identity, display_name=display_name)
        except IntegrityError:
            # A concurrent sign-in created the identity or the account first; resolving
            # again finds the rows it committed.
            continue
    raise Conflict("Another sign-in with this identity was in progress; retry.")


def _identity_resolve(identity: VerifiedIdentity, *, display_name: str | None) -> User:
    now = timezone.now()
    linked = (
        ExternalIdentity.objects.select_related("user")
        .filter(provider=identity.provider, subject=identity.subject)
        .first()
    )
    if linked is not None:
        _ensure_active(linked.user)
        linked.last_sign_in_at = now
        fields = ["last_sign_in_at"]
        if identity.email and linked.email != identity.email:
            linked.email = identity.email
            fields.append("email")
        linked.save(update_fields=fields)
        return linked.user

    if identity.email is None:
        raise IdentityTokenInvalid(
            f"The identity token carries no email address, and this {identity.provider} identity has not "
            "signed in here before. Sign in again and allow sharing your email address."
        )
    user = User.objects.filter(email=identity.email).first()
    if user is not None:
        if not identity.email_verified:
            raise EmailTaken(
                f"An account with this email address already exists, and {identity.provider} does not report "
                "the address as verified, so the two cannot be linked. Sign in with that account's email "
                "address and password instead."
            )
        if not user.email_verified:
            # Whoever registered this address never proved they own it; linking would let a
            # pre-registered password keep access to the real owner's account.
            raise EmailTaken(
                "An account with this email address already exists, but its address was never "
                "verified, so it cannot be linked to this sign-in. Sign in with that account's "
                "email address and password instead."
            )
        _ensure_active(user)
    else:
        user = User.objects.create_user(
            identity.email,
            None,  # an unusable password: the account signs in through the provider
            display_name=_new_display_name(identity, display_name),
            email_verified=identity.email_verified,
        )
    ExternalIdentity.objects.create(
        user=user,
        provider=identity.provider,
        subject=identity.subject,
        email=identity.email,
        created_at=now,
        last_sign_in_at=now,
    )
    return user


def _ensure_active(user: User) -> None:
    if not user.is_active:
        raise AccountDisabled("The account is disabled.")


def _new_display_name(identity: VerifiedIdentity, given: str | None) -> str:
    """The token's name claim, else the name the client sent, else the email's local part."""
    if identity.name:
        return identity.name
    if given and given.strip():
        return given.strip()[:DISPLAY_NAME_MAX_LENGTH]
    return (identity.email or "").split("@", 1)[0][:DISPLAY_NAME_MAX_LENGTH]
