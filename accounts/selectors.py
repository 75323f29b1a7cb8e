"""Owner-scoped reads of accounts data."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from accounts.models import ApiKey, User
from core.selectors import object_get_or_not_found


def api_key_list_for_owner(*, owner: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=owner).order_by("-created_at")


def api_key_get_for_owner(*, owner: User, key_id: uuid.UUID | str) -> ApiKey:
    """The owner's key; someone else's key is NotFound, exactly like a missing one."""
    return object_get_or_not_found(ApiKey.objects.filter(user=owner), pk=key_id, message="No such API key.")
