"""OpenAPI generation: what every operation answers besides its own body, added here from
what the view declares, so that no endpoint can be missing it and a generated client
(openapi-python-client, see docs/api.md) gets it right:
- the problem+json error responses (credentials, body and its size, path parameters,
  pages, rate limit, Idempotency-Key), views adding the specific ones (402, 409, ...)
  themselves;
- the `Idempotency-Key` request header on the operations `@idempotent` wraps;
- the JSON body of a DELETE that reads one (`@reads_body`: DELETE /v1/me's password),
  which drf-spectacular leaves out (it describes the bodies of POST, PUT and PATCH only);
- `additionalProperties: false` on every request body (an unknown member is a 400);
- the response headers: X-Request-Id on every response, Retry-After on 409, 429 and 503,
  Idempotent-Replayed on an idempotent operation's success, Content-Disposition on a file,
  Location on a redirect.

The postprocessing hooks at the end finish the document: path parameters named as the
contract names them, and the problem body's `code` as the enum of the catalogue."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework.permissions import AllowAny

from core.errors import problem_classes
from core.idempotency import HEADER as IDEMPOTENCY_HEADER
from core.idempotency import MAX_KEY_LENGTH, REPLAY_HEADER
from core.openapi import PROBLEM_DESCRIPTIONS, ProblemSerializer
from core.problem_json import PROBLEM_CONTENT_TYPE

REQUEST_ID_HEADER = "X-Request-Id"
RETRY_AFTER_STATUSES = ("409", "429", "503")
Handler = TypeVar("Handler", bound=Callable[..., Any])
IDEMPOTENCY_STATUSES = (400, 409, 422)  # idempotency_key_invalid, request_in_progress, idempotency_key_reused


def reads_body(handler: Handler) -> Handler:
    """Mark a DELETE handler that reads a body, so the schema declares it (its
    `extend_schema(request=...)`) and a generated client sends it."""
    handler.reads_body = True  # type: ignore[attr-defined]
    return handler


def _header(description: str, schema: dict[str, Any] | None = None, *, required: bool = False) -> dict[str, Any]:
    return {"schema": schema or {"type": "string"}, "description": description, "required": required}


class ProblemAutoSchema(AutoSchema):
    def _implied_error_statuses(self) -> list[int]:
        statuses = []
        if self._takes_body():
            # A body past the route's limit is 413 request_too_large before Django reads it
            # (core/asgi_limits.py), whatever the operation does with a body.
            statuses += [400, 413, 415]
        elif self._validates_query():
            statuses.append(400)  # a query parameter it reads has a value it refuses
        if not any(permission is AllowAny for permission in getattr(self.view, "permission_classes", [])):
            statuses += [401, 403]
        if "{" in self.path or self._paginated():
            statuses.append(404)  # no such resource; or, for a list, no such page
        if getattr(self.view, "throttle_scope", None):
            statuses.append(429)
        if self._honours_idempotency_key():
            statuses += IDEMPOTENCY_STATUSES
        statuses.append(500)
        return statuses

    def _takes_body(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH") or (
            self.method == "DELETE" and bool(getattr(self._handler(), "reads_body", False))
        )

    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE" or not self._takes_body():
            return super()._get_request_body(direction)
        # drf-spectacular describes the bodies of POST, PUT and PATCH only; a DELETE that
        # reads one is described as a POST's would be.
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"

    def _validates_query(self) -> bool:
        """Reads its query string through a serializer or a paginator (either answers 400 to
        a bad value)."""
        return self._paginated() or any(
            not isinstance(parameter, OpenApiParameter) for parameter in self.get_override_parameters()
        )

    def _paginated(self) -> bool:
        return any(getattr(parameter, "name", None) == "page" for parameter in self.get_override_parameters())

    def _handler(self) -> Any:
        return getattr(self.view, getattr(self.view, "action", None) or self.method.lower(), None)

    def _honours_idempotency_key(self) -> bool:
        return bool(getattr(self._handler(), "honours_idempotency_key", False))

    def get_override_parameters(self) -> list[Any]:
        parameters = list(super().get_override_parameters())
        if self._honours_idempotency_key():
            parameters.append(
                OpenApiParameter(
                    IDEMPOTENCY_HEADER,
                    {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[ -~]+$"},
                    OpenApiParameter.HEADER,
                    description="Any unique string (a UUID) to make a retry safe: the first response is "
                    "kept for 24 hours and replayed with Idempotent-Replayed: true; the same key with "
                    "another request is 422 idempotency_key_reused, while the first still runs 409 "
                    "request_in_progress.",
                )
            )
        return parameters

    def _map_serializer(self, serializer: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        """A request body (and each object nested in one) takes no member it does not name:
        core.serializers.validated refuses them, and the schema says so."""
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and schema.get("type") == "object" and "properties" in schema:
            schema["additionalProperties"] = False
        return schema

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
        for code, response in responses.items():
            response.setdefault("headers", {}).update(self._response_headers(code, response))
        return responses

    def _response_headers(self, status: str, response: dict[str, Any]) -> dict[str, Any]:
        headers = {
            REQUEST_ID_HEADER: _header("The request's id, as logged; quote it when reporting a problem.", required=True)
        }
        if status in RETRY_AFTER_STATUSES:
            headers["Retry-After"] = _header(
                "Seconds to wait before retrying (rate limits, a request still running, capacity).",
                {"type": "integer", "minimum": 0},
            )
        if status.startswith("2") and self._honours_idempotency_key():
            headers[REPLAY_HEADER] = _header(
                "`true` when this is the kept response of an earlier request (same Idempotency-Key, or "
                "a double-submit of the same request), not a new effect.",
                {"type": "string", "enum": ["true"]},
            )
        if status.startswith("3"):
            headers["Location"] = _header("Where the resource is.", required=True)
        if any(media.get("schema", {}).get("format") == "binary" for media in response.get("content", {}).values()):
            headers["Content-Disposition"] = _header(
                "`attachment` or `inline`, with the save-as name (filename* in UTF-8).", required=True
            )
        return headers


# --- Postprocessing hooks (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]) --------------------

# Python's URL keyword arguments as the contract names them on the wire.
PATH_PARAMETER_NAMES = {"project_id": "id"}


def path_parameter_wire_name(name: str) -> str:
    if name in PATH_PARAMETER_NAMES:
        return PATH_PARAMETER_NAMES[name]
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def path_parameters_as_in_contract(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """`/v1/projects/{project_id}/pages/{page_id}` -> `/v1/projects/{id}/pages/{pageId}`:
    the views keep Python's names, the document the contract's (camelCase, a project `{id}`)."""
    paths = {}
    for path, operations in result["paths"].items():
        paths[re.sub(r"\{(\w+)\}", lambda match: "{" + path_parameter_wire_name(match.group(1)) + "}", path)] = (
            operations
        )
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    parameter["name"] = path_parameter_wire_name(parameter["name"])
    result["paths"] = paths
    return result


def problem_code_enum(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """The problem body's `code` as the enum of the catalogue (GET /v1/problems)."""
    schemas = result["components"]["schemas"]
    schemas["ProblemCodeEnum"] = {
        "type": "string",
        "enum": sorted(problem.code for problem in problem_classes()),
        "description": "Every problem code the API answers with; GET /v1/problems/{code} describes one.",
    }
    schemas["Problem"]["properties"]["code"] = {"$ref": "#/components/schemas/ProblemCodeEnum"}
    return result
