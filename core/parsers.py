"""Request parsers: the camelCase JSON parser, refusing what would otherwise be a 500 or a
silent guess.

Member names arrive in the contract's camelCase and leave in snake_case. The conversion
alone is lossy: `THRESHOLD`, `Threshold` and `threshold` would all become `threshold`, and
`saved_card_id` would pass for `savedCardId`. So a name that is not the exact camelCase
spelling of what it converts to, or that names a member already given, is not converted
but set aside in the object's `refused_names`; `core.serializers.validated` answers it as
an unknown field, under the name the client sent (`wire_names`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from djangorestframework_camel_case.settings import api_settings
from djangorestframework_camel_case.util import camel_to_underscore, camelize_re, underscore_to_camel
from rest_framework import parsers
from rest_framework.exceptions import ParseError

NOT_CAMEL_CASE = "Not a field name of this API: names are camelCase, this one is {expected}."
GIVEN_TWICE = "Given more than once."


class JsonObject(dict[str, Any]):
    """A JSON object, its member names in snake_case. `wire_names` maps each to the name as
    sent; `refused_names` maps the names set aside (wrong spelling, repeated) to why."""

    def __init__(self) -> None:
        super().__init__()
        self.wire_names: dict[str, str] = {}
        self.refused_names: dict[str, str] = {}


def name_camelize(name: str) -> str:
    """The wire (camelCase) spelling of a snake_case name, as the renderer writes it."""
    return re.sub(camelize_re, underscore_to_camel, name)


def _json_object(pairs: list[tuple[str, Any]]) -> JsonObject:
    converted = JsonObject()
    for wire_name, value in pairs:
        name = camel_to_underscore(wire_name, **api_settings.JSON_UNDERSCOREIZE)
        if name_camelize(name) != wire_name:
            converted.refused_names[wire_name] = NOT_CAMEL_CASE.format(expected=name_camelize(name))
        elif name in converted:
            converted.refused_names[wire_name] = GIVEN_TWICE
        else:
            converted[name] = value
            converted.wire_names[name] = wire_name
    return converted


def _constant_refuse(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON")


class JSONParser(parsers.JSONParser):
    """camelCase JSON in, snake_case `JsonObject`s out (strict: no NaN or Infinity). A
    document nested deeper than Python's decoder can follow is a 400 malformed body, not
    a crash."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding)
            return json.loads(text, object_pairs_hook=_json_object, parse_constant=_constant_refuse)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
        except ValueError as error:  # UnicodeDecodeError and json.JSONDecodeError too
            raise ParseError(f"JSON parse error - {error}") from None
