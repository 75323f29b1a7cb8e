"""The problem codes accounts owns: signing in, credentials, identity providers, API
keys, the avatar and the account itself (the shared ones are in core.errors)."""

from __future__ import annotations

from core.errors import CredentialInvalid, RequestTooLarge, ServiceError

# --- Signing in and credentials (401) ----------------------------------------------------


class InvalidCredentials(ServiceError):
    code = "invalid_credentials"
    status = 401
    title = "Invalid credentials"
    description = "The email address or password is wrong."


class CredentialRejected(ServiceError):
    """A credential that cannot be used; the subclass says why (malformed, unknown,
    revoked, expired, ...)."""


class CredentialMalformed(CredentialRejected):
    code = "credential_malformed"
    status = 401
    title = "Malformed credential"
    description = (
        "The credential is not a well-formed API key or JWT (wrong prefix, length or "
        "checksum). Check that it was copied whole."
    )


class ApiKeyUnknown(CredentialRejected, CredentialInvalid):
    """A well-formed API key that does not exist (core's credential_invalid)."""


class ApiKeyRevoked(CredentialRejected):
    code = "api_key_revoked"
    status = 401
    title = "API key revoked"
    description = "The API key was revoked. Create a new key and replace it."


class ApiKeyExpired(CredentialRejected):
    code = "api_key_expired"
    status = 401
    title = "API key expired"
    description = "The API key passed its expiry. Create a new key and replace it."


class TokenInvalid(CredentialRejected):
    code = "token_invalid"
    status = 401
    title = "Invalid token"
    description = "The access token's signature or claims are invalid."


class TokenExpired(CredentialRejected):
    code = "token_expired"
    status = 401
    title = "Token expired"
    description = "The access token expired (tokens last 12 hours). Sign in again."


class TokenRevoked(CredentialRejected):
    code = "token_revoked"
    status = 401
    title = "Token revoked"
    description = "The password changed after this token was issued. Sign in again."


class AccountDisabled(CredentialRejected):
    code = "account_disabled"
    status = 401
    title = "Account disabled"
    description = "The account is disabled."


class IdentityTokenInvalid(ServiceError):
    code = "identity_token_invalid"
    status = 401
    title = "Identity token rejected"
    description = "The external identity token failed verification (signature, issuer, audience, expiry or nonce)."


# --- Identity providers -------------------------------------------------------------------


class ProviderUnknown(ServiceError):
    code = "provider_unknown"
    status = 404
    title = "Unknown identity provider"
    description = "No external identity provider with this name is configured."


class ProviderUnavailable(ServiceError):
    code = "provider_unavailable"
    status = 503
    title = "Identity provider unavailable"
    description = "The identity provider's signing keys could not be fetched; retry later."


# --- The account ----------------------------------------------------------------------------


class EmailTaken(ServiceError):
    code = "email_taken"
    status = 409
    title = "Email address in use"
    description = "Another account already uses this email address."


class PasswordNotSet(ServiceError):
    code = "password_not_set"
    status = 409
    title = "Password not set"
    description = (
        "The account signs in only through an external identity provider and has no "
        "password, so it cannot change its password or email address this way."
    )


class RecentSignInRequired(ServiceError):
    code = "recent_sign_in_required"
    status = 403
    title = "Recent sign-in required"
    description = (
        "Deleting an account without a password needs a JWT from a sign-in within the last "
        "ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES minutes: sign in again with the identity provider and retry."
    )


# --- API keys made by an API key ------------------------------------------------------------


class ScopeNotHeld(ServiceError):
    code = "scope_not_held"
    status = 403
    title = "Scope not held"
    description = "An API key cannot create a key with scopes it does not hold itself."


class ExpiryNotHeld(ServiceError):
    code = "expiry_not_held"
    status = 403
    title = "Expiry beyond the key's own"
    description = (
        "An API key that expires cannot create a key that expires later than it does, or never: "
        "expiresInDays must be at most maxExpiresInDays (the whole days the key has left)."
    )


# --- The avatar -------------------------------------------------------------------------------


class AvatarInvalid(ServiceError):
    code = "avatar_invalid"
    status = 400
    title = "Invalid avatar"
    description = "The avatar is not a PNG, JPEG or WebP image, is damaged, or is too large in pixels."


class AvatarTooLarge(RequestTooLarge):
    """The avatar's file is over AVATAR_MAX_BYTES (core's request_too_large)."""
