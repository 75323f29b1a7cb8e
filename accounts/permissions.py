"""Scopes: the read/write split of the contract, and `requires_scope` for the rest.

A JWT carries every right. An API key needs:
- for a safe method (GET, HEAD, OPTIONS): any of projects:read, projects:write, approve;
- for anything else: projects:write;
- for an action decorated with `@requires_scope(...)`: that scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from accounts.models import ApiKey, Scope

if TYPE_CHECKING:
    from rest_framework.views import APIView

READ_SCOPES = frozenset({Scope.PROJECTS_READ, Scope.PROJECTS_WRITE, Scope.APPROVE})
WRITE_SCOPES = frozenset({Scope.PROJECTS_WRITE})

F = TypeVar("F", bound=Callable[..., Any])


def requires_scope(*scopes: str) -> Callable[[F], F]:
    """Mark a view method (or viewset action) as needing one of these key scopes."""

    def mark(function: F) -> F:
        function.required_scopes = frozenset(scopes)  # type: ignore[attr-defined]
        return function

    return mark


def scopes_required(request: Request, view: APIView) -> frozenset[str]:
    handler_name = getattr(view, "action", None) or (request.method or "get").lower()
    handler = getattr(view, handler_name, None)
    explicit = getattr(handler, "required_scopes", None)
    if explicit is not None:
        return frozenset(explicit)
    return READ_SCOPES if request.method in SAFE_METHODS else WRITE_SCOPES


class HasScope(BasePermission):
    """Authenticated, and (for an API key) holding a scope this operation accepts."""

    message = "This API key lacks the scope this operation needs."
    code = "forbidden"

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.user is None or not request.user.is_authenticated:
            return False
        if not isinstance(request.auth, ApiKey):
            return True
        accepted = scopes_required(request, view)
        if accepted & set(request.auth.scopes):
            return True
        self.message = f"This API key lacks the scope this operation needs (one of: {', '.join(sorted(accepted))})."
        return False


class JwtOnly(BasePermission):
    """For the few operations an API key may never do (changing the password or email)."""

    message = "This operation needs an interactive sign-in (JWT), not an API key."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.user is not None and request.user.is_authenticated and not isinstance(request.auth, ApiKey)
