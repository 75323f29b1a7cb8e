"""Page-number pagination whose query parameters are validated like a body: `?page` and
`?pageSize` must be whole numbers from 1 (pageSize at most the list's maximum), given once,
else 400 validation_error naming the parameter; DRF's own class ignores such values silently."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from core.serializers import query_repeats_refuse


def positive_int_query(request: Request, name: str, *, maximum: int | None = None) -> int | None:
    """The query parameter `name` as an int from 1 to `maximum`; None when absent."""
    query_repeats_refuse(request.query_params, [name])
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValidationError({name: [_("A whole number from 1 is required, not %(value)r.") % {"value": raw}]})
    if maximum is not None and int(raw) > maximum:
        raise ValidationError({name: [_("At most %(maximum)d.") % {"maximum": maximum}]})
    return int(raw)


class StrictPageNumberPagination(PageNumberPagination):
    page_size_query_param = "pageSize"
    max_page_size = 200

    def page_size_max(self) -> int:
        return self.max_page_size

    def get_page_size(self, request: Request) -> int | None:
        return positive_int_query(request, self.page_size_query_param, maximum=self.page_size_max()) or self.page_size

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        number = positive_int_query(request, self.page_query_param)
        return number if number is not None else 1

    @classmethod
    def query_parameters(cls) -> list[OpenApiParameter]:
        """The schema of `?page` and `?pageSize` for this list (for `extend_schema(parameters=...)`)."""
        maximum = cls().page_size_max()
        return [
            OpenApiParameter(
                cls.page_query_param,
                {"type": "integer", "minimum": 1},
                description="The page, from 1 (default 1); past the last page: 404.",
            ),
            OpenApiParameter(
                cls.page_size_query_param,
                {"type": "integer", "minimum": 1, "maximum": maximum},
                description=f"Items a page, 1 to {maximum}.",
            ),
        ]
