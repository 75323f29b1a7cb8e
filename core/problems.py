"""The registry of problem codes: every error the API answers with is listed here.

A problem's `type` is PROBLEM_TYPE_BASE + "/" + code, and GET /v1/problems/{code}
describes it, so the registry is also the documentation of the error codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class ProblemType:
    code: str
    status: int
    title: str
    description: str


_REGISTRY: dict[str, ProblemType] = {}


def register(code: str, status: int, title: str, description: str) -> ProblemType:
    """Add a problem code; apps register their own codes at import time."""
    problem = ProblemType(code=code, status=status, title=title, description=description)
    existing = _REGISTRY.get(code)
    if existing is not None and existing != problem:
        raise ValueError(f"problem code {code!r} registered twice with different meanings")
    _REGISTRY[code] = problem
    return problem


def get(code: str) -> ProblemType | None:
    return _REGISTRY.get(code)


def all_problems() -> list[ProblemType]:
    return sorted(_REGISTRY.values(), key=lambda problem: (problem.status, problem.code))


def type_uri(code: str) -> str:
    return f"{settings.PROBLEM_TYPE_BASE}/{code}"


# Core's own codes; each app registers its own in its problems module.
register(
    "validation_error",
    400,
    "Invalid request",
    "One or more fields are invalid; `errors` maps each field to its messages, and `unknownFields` lists "
    "members the operation does not have (or spelt otherwise than in camelCase, or given twice) as sent.",
)
register("malformed_request", 400, "Malformed request", "The body could not be parsed (for example invalid JSON).")
register("invalid_credentials", 401, "Invalid credentials", "The email address or password is wrong.")
register(
    "not_authenticated",
    401,
    "Authentication required",
    "No credential was sent. Send a JWT or an API key in Authorization: Bearer, or an API key in X-Api-Key.",
)
register(
    "credential_malformed",
    401,
    "Malformed credential",
    "The credential is not a well-formed API key or JWT (wrong prefix, length or "
    "checksum). Check that it was copied whole.",
)
register("credential_invalid", 401, "Unknown credential", "The API key is well formed but no such key exists.")
register("api_key_revoked", 401, "API key revoked", "The API key was revoked. Create a new key and replace it.")
register("api_key_expired", 401, "API key expired", "The API key passed its expiry. Create a new key and replace it.")
register("token_invalid", 401, "Invalid token", "The access token's signature or claims are invalid.")
register("token_expired", 401, "Token expired", "The access token expired (tokens last 12 hours). Sign in again.")
register("token_revoked", 401, "Token revoked", "The password changed after this token was issued. Sign in again.")
register("account_disabled", 401, "Account disabled", "The account is disabled.")
register(
    "identity_token_invalid",
    401,
    "Identity token rejected",
    "The external identity token failed verification (signature, issuer, audience, expiry or nonce).",
)
register("forbidden", 403, "Forbidden", "The credential is valid but lacks the scope this operation needs.")
register("not_found", 404, "Not found", "The resource does not exist or does not belong to the caller.")
register("method_not_allowed", 405, "Method not allowed", "The resource does not support this HTTP method.")
register("not_acceptable", 406, "Not acceptable", "The Accept header asks for a representation the API does not offer.")
register("conflict", 409, "Conflict", "The request conflicts with the current state of the resource.")
register("email_taken", 409, "Email address in use", "Another account already uses this email address.")
register(
    "password_not_set",
    409,
    "Password not set",
    "The account signs in only through an external identity provider and has no "
    "password, so it cannot change its password or email address this way.",
)
register("request_too_large", 413, "Request too large", "The request body or uploaded file is larger than allowed.")
register(
    "unsupported_media_type", 415, "Unsupported media type", "The request body's Content-Type is not accepted here."
)
register(
    "rate_limited",
    429,
    "Too many requests",
    "The rate limit for this operation was reached; retry after the number of seconds in the Retry-After header.",
)
register(
    "server_error",
    500,
    "Internal server error",
    "Something went wrong on our side. It was logged; retrying later is safe.",
)
register("service_unavailable", 503, "Service unavailable", "A dependency is temporarily unavailable; retry later.")
