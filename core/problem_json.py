"""RFC 9457 problem+json for every error under /v1: one handler.

`problem_of` turns any exception into the problem it answers (a `ServiceError` as it is,
DRF's and Django's exceptions by a table onto core's classes); `problem_body` is the one
body. DRF's EXCEPTION_HANDLER, Django's handler400/403/404/500, the CSRF failure view,
`ProblemJsonMiddleware` and the ASGI body limits (core.asgi_limits) all answer through
them, so an error looks the same wherever it started.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from core.errors import (
    CredentialInvalid,
    Forbidden,
    MalformedRequest,
    MethodNotAllowed,
    NotAcceptable,
    NotAuthenticated,
    NotFound,
    RateLimited,
    RequestTooLarge,
    ServerError,
    ServiceError,
    UnsupportedMediaType,
    ValidationFailed,
    problem_class,
    type_uri,
)

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
API_PREFIX = "/v1/"
UNEXPECTED_DETAIL = "Something went wrong on our side."  # a 500 outside DRF's views

# DRF's and Django's exceptions, each as the class of its code; the detail is the
# exception's own (None) or, for Django's, which carry none meant for a client, this one.
# The first match wins: RequestDataTooBig is a SuspiciousOperation.
_FOREIGN: tuple[tuple[type[Exception], type[ServiceError], str | None], ...] = (
    (Http404, NotFound, "No such resource."),
    (DjangoPermissionDenied, Forbidden, "You do not have permission to do this."),
    (RequestDataTooBig, RequestTooLarge, "The request body is larger than allowed."),
    (SuspiciousOperation, MalformedRequest, "The request was refused."),
    (drf_exceptions.ParseError, MalformedRequest, None),
    (drf_exceptions.NotAuthenticated, NotAuthenticated, None),
    (drf_exceptions.PermissionDenied, Forbidden, None),
    (drf_exceptions.NotFound, NotFound, None),
    (drf_exceptions.MethodNotAllowed, MethodNotAllowed, None),
    (drf_exceptions.NotAcceptable, NotAcceptable, None),
    (drf_exceptions.UnsupportedMediaType, UnsupportedMediaType, None),
    (drf_exceptions.Throttled, RateLimited, None),
)


def problem_of(exc: BaseException) -> ServiceError | None:
    """The problem an exception answers as; None for one nobody expected (a bug, which
    the caller logs and answers server_error)."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, drf_exceptions.APIException):
        problem = _drf_problem(exc)
        if problem is not None:
            problem.status = exc.status_code  # 403, not 401, where a view has no challenge to send
            wait = getattr(exc, "wait", None)
            if wait is not None:
                problem.retry_after_seconds = max(1, int(wait + 0.999))
        return problem
    for foreign, problem_type, detail in _FOREIGN:
        if isinstance(exc, foreign):
            return problem_type(detail)
    return None


def _drf_problem(exc: drf_exceptions.APIException) -> ServiceError | None:
    if isinstance(exc, drf_exceptions.ValidationError):
        return ValidationFailed(_flatten_errors(exc.detail))
    if isinstance(exc, drf_exceptions.AuthenticationFailed):
        # Our authentication classes name the 401 code (accounts.errors) as the detail's code.
        detail = exc.detail if isinstance(exc.detail, str) else "Authentication failed."
        named = problem_class(getattr(exc.detail, "code", None) or "")
        rejected = named if named is not None and named.status == 401 else CredentialInvalid
        return rejected(str(detail))
    for foreign, problem_type, _detail in _FOREIGN:
        if isinstance(exc, foreign):
            return problem_type(str(exc.detail))
    declared = problem_class(str(exc.default_code))
    return declared(str(exc.detail)) if declared is not None else None


def _unexpected(exc: BaseException, *, instance: str | None, detail: str | None = None) -> ServerError:
    logger.error("Unhandled error on %s", instance, exc_info=exc)
    return ServerError(detail)


def problem_body(problem: ServiceError, *, instance: str | None) -> dict[str, Any]:
    """The problem+json body: RFC 9457's members, our `code`, then the problem's extras."""
    body: dict[str, Any] = {
        "type": type_uri(problem.code),
        "title": problem.title,
        "status": problem.status,
        "detail": problem.detail,
        "instance": instance,
        "code": problem.code,
    }
    body.update(problem.extra)
    return body


def _headers(problem: ServiceError, exc: BaseException | None = None) -> dict[str, str]:
    headers: dict[str, str] = {}
    challenge = getattr(exc, "auth_header", None)  # set by DRF on a 401
    if challenge:
        headers["WWW-Authenticate"] = challenge
    if problem.retry_after_seconds is not None:
        headers["Retry-After"] = str(problem.retry_after_seconds)
    return headers


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF's EXCEPTION_HANDLER: every exception a view raises becomes problem+json."""
    request = context.get("request")
    instance = request.path if request is not None else None
    problem = problem_of(exc) or _unexpected(exc, instance=instance)
    return Response(
        problem_body(problem, instance=instance),
        status=problem.status,
        headers=_headers(problem, exc),
        content_type=PROBLEM_CONTENT_TYPE,
    )


def problem_response(request: HttpRequest, problem: ServiceError) -> JsonResponse:
    """A plain Django response carrying a problem (for code outside DRF's views)."""
    response = JsonResponse(
        problem_body(problem, instance=request.path), status=problem.status, content_type=PROBLEM_CONTENT_TYPE
    )
    for name, value in _headers(problem).items():
        response[name] = value
    return response


# --- Django's own errors under /v1 ---------------------------------------------------------


def _is_api_path(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX) or request.path == API_PREFIX.rstrip("/")


def _django_handler(problem: Callable[[], ServiceError], fallback: Callable[..., HttpResponse]) -> Any:
    """handler400/403/404/500: the problem under /v1, Django's own page elsewhere (the admin)."""

    def handler(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
        if _is_api_path(request):
            return problem_response(request, problem())
        if fallback is defaults.server_error:
            return fallback(request)
        return fallback(request, exception)

    return handler


handler400 = _django_handler(lambda: MalformedRequest("The request could not be understood."), defaults.bad_request)
handler403 = _django_handler(lambda: Forbidden("You do not have permission to do this."), defaults.permission_denied)
handler404 = _django_handler(lambda: NotFound("No such resource."), defaults.page_not_found)
handler500 = _django_handler(lambda: ServerError(UNEXPECTED_DETAIL), defaults.server_error)


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The last /v1 route: an unknown address is a problem+json 404 even with DEBUG on
    (and for a POST too: there is nothing here for CSRF to protect)."""
    return problem_response(request, NotFound("No such resource."))


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: problem+json under /v1, Django's page elsewhere (the admin)."""
    if _is_api_path(request):
        return problem_response(request, Forbidden(f"CSRF check failed: {reason}"))
    return csrf.csrf_failure(request, reason=reason)


class ProblemJsonMiddleware:
    """Turns an exception escaping a /v1 view (outside DRF's, which answer through
    `problem_exception_handler`), and a request body over Django's limits, into
    problem+json instead of an HTML page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not _is_api_path(request):
            return None
        problem = problem_of(exception) or _unexpected(exception, instance=request.path, detail=UNEXPECTED_DETAIL)
        return problem_response(request, problem)


# --- DRF's validation errors as field -> messages --------------------------------------------


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
