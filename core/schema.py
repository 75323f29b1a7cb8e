"""OpenAPI generation: the problem+json error responses every operation can give, added
from what the view declares (credentials, body, path parameters, pages, rate limit), so that no
endpoint can be missing them; views add the specific ones (402, 409, ...) themselves."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework.permissions import AllowAny

from core.errors import PROBLEM_CONTENT_TYPE
from core.openapi import PROBLEM_DESCRIPTIONS, ProblemSerializer


class ProblemAutoSchema(AutoSchema):
    def _implied_error_statuses(self) -> list[int]:
        statuses = []
        if self.method in ("POST", "PUT", "PATCH"):
            statuses += [400, 415]
        elif self._validates_query():
            statuses.append(400)  # a query parameter it reads has a value it refuses
        if not any(permission is AllowAny for permission in getattr(self.view, "permission_classes", [])):
            statuses += [401, 403]
        if "{" in self.path or self._paginated():
            statuses.append(404)  # no such resource; or, for a list, no such page
        if getattr(self.view, "throttle_scope", None):
            statuses.append(429)
        statuses.append(500)
        return statuses

    def _validates_query(self) -> bool:
        """Reads its query string through a serializer (which answers 400 to a bad value)."""
        return any(not isinstance(parameter, OpenApiParameter) for parameter in self.get_override_parameters())

    def _paginated(self) -> bool:
        return any(getattr(parameter, "name", None) == "page" for parameter in self.get_override_parameters())

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for status in self._implied_error_statuses():
            if str(status) not in responses:
                responses[str(status)] = self._get_response_for_code(
                    ProblemSerializer, str(status), media_types=(PROBLEM_CONTENT_TYPE,), direction=direction
                )
                responses[str(status)]["description"] = PROBLEM_DESCRIPTIONS[status]
        return responses
