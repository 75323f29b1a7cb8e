"""Problem codes owned by accounts (the shared ones are in core.problems)."""

from core.problems import register

register(
    "avatar_invalid",
    400,
    "Invalid avatar",
    "The avatar is not a PNG, JPEG or WebP image, is damaged, or is too large in pixels.",
)
register("scope_not_held", 403, "Scope not held", "An API key cannot create a key with scopes it does not hold itself.")
register(
    "expiry_not_held",
    403,
    "Expiry beyond the key's own",
    "An API key that expires cannot create a key that expires later than it does, or never: "
    "expiresInDays must be at most maxExpiresInDays (the whole days the key has left).",
)
register(
    "provider_unknown", 404, "Unknown identity provider", "No external identity provider with this name is configured."
)
register(
    "provider_unavailable",
    503,
    "Identity provider unavailable",
    "The identity provider's signing keys could not be fetched; retry later.",
)
register(
    "recent_sign_in_required",
    403,
    "Recent sign-in required",
    "Deleting an account without a password needs a JWT from a sign-in within the last "
    "ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES minutes: sign in again with the identity provider and retry.",
)
