"""The errors the API answers with, each declared once, as an exception class.

A problem code is a `ServiceError` subclass that declares `code`, `status`, `title` and
`description`; declaring it adds it to the catalogue, which GET /v1/problems, the
schema's code enum and the docs are built from. Each app declares its own codes in its
`errors` module (core's shared ones are below); `core.problem_json` turns any exception
into problem+json.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings

IDEMPOTENCY_KEY_MAX_LENGTH = 255

_CATALOGUE: dict[str, type[ServiceError]] = {}
_DECLARED = ("status", "title", "description")


class ServiceError(Exception):
    """A problem the API answers with as problem+json: `detail` says what happened this
    time (the code's description when not given), `extra` adds members to the body
    (`shortfall`, `errors`, ...).

    A subclass that declares `code` is that code's one class and declares its meaning
    beside it. A subclass without a code groups others (`CredentialRejected`); a subclass
    of a coded class shares its code (`AvatarTooLarge` is a `RequestTooLarge`)."""

    code: ClassVar[str]
    status: int  # an instance may differ: DRF answers a missing credential 403 on some views
    title: ClassVar[str]
    description: ClassVar[str]
    retry_after_seconds: int | None = None  # sent as Retry-After when set

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in vars(cls):
            _catalogue_add(cls)

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        if not hasattr(self, "code"):
            raise TypeError(f"{type(self).__qualname__} declares no problem code: raise one of its subclasses")
        self.detail = detail or self.description
        self.extra = extra
        super().__init__(self.detail)

    @property
    def status_code(self) -> int:
        return self.status


def _catalogue_add(problem: type[ServiceError]) -> None:
    missing = [name for name in _DECLARED if name not in vars(problem)]
    if missing:
        raise TypeError(f"{problem.__qualname__} declares code {problem.code!r} without {', '.join(missing)}")
    existing = _CATALOGUE.get(problem.code)
    if existing is not None:
        raise TypeError(
            f"problem code {problem.code!r} declared twice, by {existing.__module__}.{existing.__qualname__} and "
            f"{problem.__module__}.{problem.__qualname__}: one class per code (subclass it to share the code)"
        )
    _CATALOGUE[problem.code] = problem


def problem_class(code: str) -> type[ServiceError] | None:
    """The class that declares this code, None for a code nobody declared."""
    return _CATALOGUE.get(code)


def problem_classes() -> list[type[ServiceError]]:
    """The catalogue: every declared code's class, by status then code."""
    return sorted(_CATALOGUE.values(), key=lambda problem: (problem.status, problem.code))


def type_uri(code: str) -> str:
    """A problem's `type`: where GET /v1/problems/{code} describes it."""
    return f"{settings.PROBLEM_TYPE_BASE}/{code}"


# --- The codes every app shares, and those only DRF or Django raise ----------------------


class ValidationFailed(ServiceError):
    """Input that passed the serializer but breaks a domain rule, per field."""

    code = "validation_error"
    status = 400
    title = "Invalid request"
    description = (
        "One or more fields are invalid; `errors` maps each field to its messages, and `unknownFields` lists "
        "members the operation does not have (or spelt otherwise than in camelCase, or given twice) as sent."
    )

    def __init__(self, errors: dict[str, list[str]], detail: str | None = None) -> None:
        super().__init__(detail or "One or more fields are invalid.", errors=errors)


class MalformedRequest(ServiceError):
    code = "malformed_request"
    status = 400
    title = "Malformed request"
    description = "The body could not be parsed (for example invalid JSON)."


class NotAuthenticated(ServiceError):
    code = "not_authenticated"
    status = 401
    title = "Authentication required"
    description = (
        "No credential was sent. Send a JWT or an API key in Authorization: Bearer, or an API key in X-Api-Key."
    )


class CredentialInvalid(ServiceError):
    """Also what a rejected credential answers when it names no 401 code of its own."""

    code = "credential_invalid"
    status = 401
    title = "Unknown credential"
    description = "The API key is well formed but no such key exists."


class Forbidden(ServiceError):
    code = "forbidden"
    status = 403
    title = "Forbidden"
    description = "The credential is valid but lacks the scope this operation needs."


class NotFound(ServiceError):
    code = "not_found"
    status = 404
    title = "Not found"
    description = "The resource does not exist or does not belong to the caller."


class MethodNotAllowed(ServiceError):
    code = "method_not_allowed"
    status = 405
    title = "Method not allowed"
    description = "The resource does not support this HTTP method."


class NotAcceptable(ServiceError):
    code = "not_acceptable"
    status = 406
    title = "Not acceptable"
    description = "The Accept header asks for a representation the API does not offer."


class Conflict(ServiceError):
    code = "conflict"
    status = 409
    title = "Conflict"
    description = "The request conflicts with the current state of the resource."


class RequestTooLarge(ServiceError):
    code = "request_too_large"
    status = 413
    title = "Request too large"
    description = "The request body or uploaded file is larger than allowed."


class UnsupportedMediaType(ServiceError):
    code = "unsupported_media_type"
    status = 415
    title = "Unsupported media type"
    description = "The request body's Content-Type is not accepted here."


class RateLimited(ServiceError):
    code = "rate_limited"
    status = 429
    title = "Too many requests"
    description = (
        "The rate limit for this operation was reached; retry after the number of seconds in the Retry-After header."
    )


class ServerError(ServiceError):
    code = "server_error"
    status = 500
    title = "Internal server error"
    description = "Something went wrong on our side. It was logged; retrying later is safe."


class ServiceUnavailable(ServiceError):
    code = "service_unavailable"
    status = 503
    title = "Service unavailable"
    description = "A dependency is temporarily unavailable; retry later."


# --- Idempotent POSTs (core.idempotency) ----------------------------------------------------


class IdempotencyKeyInvalid(ServiceError):
    code = "idempotency_key_invalid"
    status = 400
    title = "Invalid Idempotency-Key"
    description = f"The Idempotency-Key header must be 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters."


class RequestInProgress(ServiceError):
    code = "request_in_progress"
    status = 409
    title = "Request in progress"
    description = (
        "The same request (the same Idempotency-Key, or without one the same body) is still being processed; "
        "retry after Retry-After seconds."
    )
    retry_after_seconds = 1


class IdempotencyKeyReused(ServiceError):
    code = "idempotency_key_reused"
    status = 422
    title = "Idempotency key reused"
    description = "This Idempotency-Key was used before with a different request."
