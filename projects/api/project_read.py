"""The project with its pages, written page chunk by page chunk: a 4,000-page book is
streamed, never held whole, in the very bytes a plain Response of ProjectSerializer would
have (docs/performance.md, "A big book's read").

The project's own fields go through ProjectSerializer and the negotiated renderer as any
answer's do; only its pages are written here, PAGE_CHUNK rows at a time, from their rows
(selectors.projects.page_rows) in camelCase already, so that neither a model instance nor
the renderer's camelCase conversion is paid per page. A request for indented JSON
(`Accept: application/json; indent=4`) gets the plain Response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from djangorestframework_camel_case.util import camelize
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from projects.api.serializers import PageRowRepresentation, PageSerializer, ProjectSerializer
from projects.models import Project
from projects.selectors.projects import PageRow

PAGE_CHUNK = 500


def project_response(request: Request, project: Project, *, status: int = 200) -> HttpResponseBase:
    """The project of the contract (ProjectSerializer) with every page, streamed when the
    answer is compact JSON and its pages take more than one chunk (a book that fits one gains
    nothing from it, and keeps its Content-Length). `project` comes from
    selectors.projects.project_with_pages."""
    renderer = request.accepted_renderer
    media_type = request.accepted_media_type
    if not isinstance(renderer, JSONRenderer) or renderer.get_indent(media_type, {}) is not None:
        return Response(ProjectSerializer(project).data, status=status)
    data = ProjectSerializer(project, context={"pages_in_chunks": True}).data
    keys = list(data)
    cut = keys.index("pages")
    head = renderer.render({key: data[key] for key in keys[:cut]}, media_type)
    tail = renderer.render({key: data[key] for key in keys[cut + 1 :]}, media_type)
    rows: list[PageRow] = project.page_rows  # type: ignore[attr-defined]
    chunks = _document(head=head, tail=tail, pages=_page_chunks(renderer, media_type, project, rows))
    if len(rows) <= PAGE_CHUNK:
        return HttpResponse(b"".join(chunks), status=status, content_type=renderer.media_type)
    content = _async(chunks) if isinstance(request._request, ASGIRequest) else chunks
    return StreamingHttpResponse(content, status=status, content_type=renderer.media_type)


def _document(*, head: bytes, tail: bytes, pages: Iterator[bytes]) -> Iterator[bytes]:
    """`{head..., "pages": [pages...], tail...}` from the rendered head and tail objects."""
    yield head[:-1] + b',"pages":['
    for number, chunk in enumerate(pages):
        yield chunk if number == 0 else b"," + chunk
    yield b"]," + tail[1:]


def _page_chunks(renderer: JSONRenderer, media_type: str, project: Project, rows: list[PageRow]) -> Iterator[bytes]:
    """The pages' JSON, PAGE_CHUNK at a time, each chunk a list's items without its brackets.
    Rendered by JSONRenderer's own encoding, with the keys already as the renderer would
    write them (camelCase), so that its conversion is not paid per page."""
    keys: list[str] = PageSerializer.Meta.fields
    underscoreize = getattr(renderer, "json_underscoreize", None)
    if underscoreize is not None:
        keys = list(camelize(dict.fromkeys(keys), **underscoreize))
    represent = PageRowRepresentation(project_id=project.pk, keys=keys)
    for start in range(0, len(rows), PAGE_CHUNK):
        pages: list[dict[str, Any]] = [represent(row) for row in rows[start : start + PAGE_CHUNK]]
        yield JSONRenderer.render(renderer, pages, media_type)[1:-1]


async def _async(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The same chunks for the ASGI server, which would otherwise gather a synchronous
    stream whole before sending it."""
    for chunk in chunks:
        yield chunk
