"""Request parsers: the camelCase JSON parser, refusing what would otherwise be a 500."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from djangorestframework_camel_case.parser import CamelCaseJSONParser
from rest_framework.exceptions import ParseError


class JSONParser(CamelCaseJSONParser):
    """camelCase JSON in, snake_case data out (strict: no NaN or Infinity). A document
    nested deeper than Python's decoder can follow is a 400 malformed body, not a crash."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
