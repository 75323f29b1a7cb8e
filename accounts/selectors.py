"""Owner-scoped reads of accounts data."""

from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from accounts.models import ApiKey, User
from core.errors import NotFound


def api_key_list_for_owner(*, owner: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=owner).order_by("-created_at")


def api_key_get_for_owner(*, owner: User, key_id: uuid.UUID | str) -> ApiKey:
    """The owner's key; someone else's key is NotFound, exactly like a missing one."""
    try:
        return ApiKey.objects.get(user=owner, pk=key_id)
    except (ApiKey.DoesNotExist, ValueError, ValidationError):
        raise NotFound("No such API key.") from None
