"""The route table the ASGI body limits read (core/asgi_limits.py): every route that
receives a file declares its limit, so none falls back to the small JSON limit unnoticed,
and the public routes are the ones the schema calls public. The limits themselves are
proven on a real server in tests/reliability/test_body_limits.py."""

from __future__ import annotations

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.parsers import MultiPartParser

from core.asgi_limits import body_policy


def drf_views(patterns: list[URLPattern | URLResolver] | None = None) -> Iterator[type]:
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(pattern, URLResolver):
            yield from drf_views(pattern.url_patterns)
        elif getattr(pattern.callback, "cls", None) is not None:
            yield pattern.callback.cls


def test_every_route_that_receives_a_file_declares_its_limit():
    receiving = [view for view in drf_views() if any(issubclass(p, MultiPartParser) for p in view.parser_classes)]

    assert receiving
    assert [view.__name__ for view in receiving if getattr(view, "body_file_limits", None) is None] == []


def test_the_policy_of_a_few_routes(settings):
    upload = body_policy(path="/v1/uploads", method="POST")
    estimate = body_policy(path="/v1/anonymous-estimate", method="POST")
    json_route = body_policy(path="/v1/projects", method="POST")

    assert (upload.reads_body, upload.problem_extra) == (True, {"maxFileSizeBytes": settings.UPLOAD_MAX_BYTES})
    assert upload.authenticators  # a credential is needed before it is read
    assert (estimate.reads_body, estimate.authenticators) == (True, None)  # public
    assert json_route.max_bytes == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert not body_policy(path="/v1/uploads", method="GET").reads_body
    assert not body_policy(path="/v1/meta", method="POST").reads_body
    assert not body_policy(path="/v1/nothing-here", method="POST").reads_body
