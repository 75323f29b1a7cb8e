"""Content negotiation for downloads."""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class AcceptAnyNegotiation(DefaultContentNegotiation):
    """Accept is not checked: the download answers with the image itself, and an error as
    problem+json, so a client asking for image/png is not refused with 406 by the JSON renderer."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type
