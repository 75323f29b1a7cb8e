"""Owner-scoped reads of accounts data, and the account a credential names."""

from __future__ import annotations

import uuid

from django.db import connection
from django.db.models import QuerySet

from accounts.models import ApiKey, User
from core.selectors import object_get_or_not_found


def api_key_list_for_owner(*, owner: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=owner).order_by("-created_at")


def api_key_get_for_owner(*, owner: User, key_id: uuid.UUID | str) -> ApiKey:
    """The owner's key; someone else's key is NotFound, exactly like a missing one."""
    return object_get_or_not_found(ApiKey.objects.filter(user=owner), pk=key_id, message="No such API key.")


# Every request with a JWT reads its account: in SQL written once, as the ORM spent most of
# that read compiling the same query again (docs/performance.md, "The API under load").
_USER_BY_ID = f"SELECT * FROM {User._meta.db_table} WHERE {User._meta.pk.column} = %s"  # noqa: S608


def user_get_by_id(*, user_id: uuid.UUID | str) -> User | None:
    """The account with this id, every column as `User.objects.get` reads it, or None."""
    key = User._meta.pk.get_db_prep_value(user_id, connection)
    return next(iter(User.objects.raw(_USER_BY_ID, [key])), None)
