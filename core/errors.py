"""RFC 9457 problem+json for every error under /v1.

Services raise `ServiceError` subclasses carrying a problem code; DRF's exception handler
(`problem_exception_handler`), Django's error handlers and `ProblemJsonMiddleware` all
render through `problem_body`, so an error looks the same wherever it started.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from core import problems

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
API_PREFIX = "/v1/"


class ServiceError(Exception):
    """A domain error with a problem code; the API answers it as problem+json."""

    code = "conflict"
    status: int | None = None
    retry_after_seconds: int | None = None  # sent as Retry-After when set

    def __init__(self, detail: str | None = None, *, code: str | None = None, **extra: Any) -> None:
        self.code = code or self.code
        problem = problems.get(self.code)
        self.detail = detail or (problem.description if problem else self.code)
        self.extra = extra
        super().__init__(self.detail)

    @property
    def status_code(self) -> int:
        if self.status is not None:
            return self.status
        problem = problems.get(self.code)
        return problem.status if problem else 400


class ValidationFailed(ServiceError):
    """Input that passed the serializer but breaks a domain rule, per field."""

    code = "validation_error"

    def __init__(self, errors: dict[str, list[str]], detail: str | None = None) -> None:
        super().__init__(detail or "One or more fields are invalid.", errors=errors)


class Conflict(ServiceError):
    code = "conflict"


class NotFound(ServiceError):
    code = "not_found"


def problem_body(
    *, code: str, status: int, detail: str, instance: str | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    problem = problems.get(code)
    body: dict[str, Any] = {
        "type": problems.type_uri(code),
        "title": problem.title if problem else code.replace("_", " ").capitalize(),
        "status": status,
        "detail": detail,
        "instance": instance,
        "code": code,
    }
    if extra:
        body.update(extra)
    return body


def _is_api_path(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX) or request.path == API_PREFIX.rstrip("/")


def problem_response(request: HttpRequest, *, code: str, status: int, detail: str) -> JsonResponse:
    """A plain Django response carrying a problem (for code outside DRF's views)."""
    return JsonResponse(
        problem_body(code=code, status=status, detail=detail, instance=request.path),
        status=status,
        content_type=PROBLEM_CONTENT_TYPE,
    )


def _flatten_errors(detail: Any) -> dict[str, list[str]]:
    """DRF's nested error details as field -> messages, nested fields joined with dots."""
    if isinstance(detail, list):
        return {"nonFieldErrors": [str(message) for message in _messages(detail)]}
    errors: dict[str, list[str]] = {}
    for field, value in detail.items():
        name = "nonFieldErrors" if field in ("non_field_errors", "__all__") else field
        if isinstance(value, dict):
            for sub_field, messages in _flatten_errors(value).items():
                errors[f"{name}.{sub_field}"] = messages
        else:
            errors[name] = [str(message) for message in _messages(value)]
    return errors


def _messages(value: Any) -> list[Any]:
    if isinstance(value, list):
        flat: list[Any] = []
        for item in value:
            flat.extend(_messages(item) if isinstance(item, (list, dict)) else [item])
        return flat
    if isinstance(value, dict):
        return [message for messages in value.values() for message in _messages(messages)]
    return [value]


_DRF_CODES: dict[type[drf_exceptions.APIException], str] = {
    drf_exceptions.ParseError: "malformed_request",
    drf_exceptions.NotAuthenticated: "not_authenticated",
    drf_exceptions.PermissionDenied: "forbidden",
    drf_exceptions.NotFound: "not_found",
    drf_exceptions.MethodNotAllowed: "method_not_allowed",
    drf_exceptions.NotAcceptable: "not_acceptable",
    drf_exceptions.UnsupportedMediaType: "unsupported_media_type",
    drf_exceptions.Throttled: "rate_limited",
}


def _drf_problem(exc: drf_exceptions.APIException) -> tuple[str, str, dict[str, Any]]:
    """(code, detail, extra) for one of DRF's exceptions."""
    if isinstance(exc, drf_exceptions.ValidationError):
        return "validation_error", "One or more fields are invalid.", {"errors": _flatten_errors(exc.detail)}
    if isinstance(exc, drf_exceptions.AuthenticationFailed):
        detail = exc.detail if isinstance(exc.detail, str) else "Authentication failed."
        code = getattr(exc.detail, "code", None) or "credential_invalid"
        if problems.get(code) is None or problems.get(code).status != 401:  # type: ignore[union-attr]
            code = "credential_invalid"
        return code, str(detail), {}
    for exc_class, code in _DRF_CODES.items():
        if isinstance(exc, exc_class):
            return code, str(exc.detail), {}
    return getattr(exc, "default_code", "server_error"), str(exc.detail), {}


def _django_problem(exc: Exception) -> tuple[str, int, str] | None:
    """(code, status, detail) for the Django exceptions that mean a client error."""
    if isinstance(exc, Http404):
        return "not_found", 404, "No such resource."
    if isinstance(exc, DjangoPermissionDenied):
        return "forbidden", 403, "You do not have permission to do this."
    if isinstance(exc, RequestDataTooBig):
        return "request_too_large", 413, "The request body is larger than allowed."
    if isinstance(exc, SuspiciousOperation):
        return "malformed_request", 400, "The request was refused."
    return None


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: every exception a view raises becomes problem+json."""
    request = context.get("request")
    instance = request.path if request is not None else None
    headers: dict[str, str] = {}
    if isinstance(exc, ServiceError):
        code, detail, extra, status = exc.code, exc.detail, exc.extra, exc.status_code
        if exc.retry_after_seconds is not None:
            headers["Retry-After"] = str(exc.retry_after_seconds)
    elif (known := _django_problem(exc)) is not None:
        code, status, detail = known
        extra = {}
    elif isinstance(exc, drf_exceptions.APIException):
        code, detail, extra = _drf_problem(exc)
        status = exc.status_code
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
        if getattr(exc, "wait", None) is not None:
            headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))  # type: ignore[attr-defined]
    else:
        logger.error("Unhandled error on %s", instance, exc_info=exc)
        code, detail, extra, status = "server_error", problems.get("server_error").description, {}, 500  # type: ignore[union-attr]
    body = problem_body(code=code, status=status, detail=detail, instance=instance, extra=extra)
    return Response(body, status=status, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


# --- Django's own errors under /v1 ---------------------------------------------------------


def _django_handler(code: str, status: int, detail: str, fallback_name: str):  # type: ignore[no-untyped-def]
    from django.views import defaults

    fallback = getattr(defaults, fallback_name)

    def handler(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
        if _is_api_path(request):
            return problem_response(request, code=code, status=status, detail=detail)
        if fallback_name == "server_error":
            return fallback(request)
        return fallback(request, exception)

    return handler


handler400 = _django_handler("malformed_request", 400, "The request could not be understood.", "bad_request")
handler403 = _django_handler("forbidden", 403, "You do not have permission to do this.", "permission_denied")
handler404 = _django_handler("not_found", 404, "No such resource.", "page_not_found")
handler500 = _django_handler("server_error", 500, "Something went wrong on our side.", "server_error")


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The last /v1 route: an unknown address is a problem+json 404 even with DEBUG on
    (and for a POST too: there is nothing here for CSRF to protect)."""
    return problem_response(request, code="not_found", status=404, detail="No such resource.")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: problem+json under /v1, Django's page elsewhere (the admin)."""
    if _is_api_path(request):
        return problem_response(request, code="forbidden", status=403, detail=f"CSRF check failed: {reason}")
    from django.views.csrf import csrf_failure as django_csrf_failure

    return django_csrf_failure(request, reason=reason)


class ProblemJsonMiddleware:
    """Turns an exception escaping a /v1 view, and a request body over Django's limits,
    into problem+json instead of an HTML page."""

    def __init__(self, get_response):  # type: ignore[no-untyped-def]
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not _is_api_path(request):
            return None
        known = _django_problem(exception)
        if known is not None:
            code, status, detail = known
            return problem_response(request, code=code, status=status, detail=detail)
        logger.error("Unhandled error on %s", request.path, exc_info=exception)
        return problem_response(request, code="server_error", status=500, detail="Something went wrong on our side.")
