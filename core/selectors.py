"""Reads every app shares: one row by its id, where a missing row and a malformed id are the
same NotFound."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db.models import Model, QuerySet

from core.errors import NotFound

M = TypeVar("M", bound=Model)


def object_get_or_not_found(queryset: QuerySet[M], *, message: str, **lookup: Any) -> M:
    """The queryset's one row matching the lookup; NotFound(message) when there is none or
    the id is malformed. Scope the queryset to its owner and someone else's row is NotFound
    too, exactly like a missing one."""
    try:
        return queryset.get(**lookup)
    except (ObjectDoesNotExist, ValueError, ValidationError):
        raise NotFound(message) from None
