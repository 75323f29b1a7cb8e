"""Django's ASGI handler as the server runs it (core/asgi_handler.py): each request's
synchronous part on one thread of its own, the threads kept from one request to the next,
the answers those of Django's own handler."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from core.asgi_handler import RequestHandler, RequestThread
from projects.models import JobStatus, PageStatus, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.projects.test_status_view import with_job


@pytest.fixture
def handler() -> Iterator[RequestHandler]:
    made = RequestHandler(idle_threads=2)
    yield made
    while made._idle:
        made._idle.pop().retire()


def get_all(handler: RequestHandler, paths: list[str], *, at_once: bool, **headers: str) -> list[httpx.Response]:
    """GETs each path through the handler (the ASGI interface the server calls), one after
    the other or all at once."""

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=handler)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as client:
            if at_once:
                return list(await asyncio.gather(*(client.get(path) for path in paths)))
            return [await client.get(path) for path in paths]

    return asyncio.run(run())


def access_threads(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The thread of each access line (written by the middleware, on the request's thread):
    its name, which no other thread of the process has had."""
    return [record.threadName or "" for record in caplog.records if record.name == "core.access"]


def alive(names: set[str]) -> set[str]:
    return names & {thread.name for thread in threading.enumerate()}


def test_requests_one_after_another_run_on_one_kept_thread(handler, caplog):
    with caplog.at_level(logging.INFO, logger="core.access"):
        responses = get_all(handler, ["/v1/model-status"] * 12, at_once=False)

    assert [response.status_code for response in responses] == [200] * 12
    threads = access_threads(caplog)
    assert len(threads) == 12
    assert len(set(threads)) == 1
    assert threads[0] != threading.current_thread().name


def test_requests_at_once_each_run_on_a_thread_of_their_own_and_extra_threads_end(handler, caplog):
    with caplog.at_level(logging.INFO, logger="core.access"):
        responses = get_all(handler, ["/v1/model-status"] * 6, at_once=True)

    assert [response.status_code for response in responses] == [200] * 6
    threads = set(access_threads(caplog))
    assert len(threads) > 1  # requests in flight together never share a thread
    deadline = time.monotonic() + 30
    while len(alive(threads)) > 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(alive(threads)) <= 2  # idle_threads


def test_a_thread_is_taken_again_only_once_its_last_call_returned(handler):
    thread = RequestThread(handler)
    running = threading.Event()
    go_on = threading.Event()

    def view_still_running() -> None:
        running.set()
        go_on.wait(timeout=30)

    thread.submit(view_still_running)
    assert running.wait(timeout=30)
    thread.release()  # the client went away; its view has not returned
    idle_while_running = list(handler._idle)
    go_on.set()
    deadline = time.monotonic() + 30
    while thread not in handler._idle and time.monotonic() < deadline:
        time.sleep(0.01)

    assert idle_while_running == []
    assert list(handler._idle) == [thread]


@pytest.mark.django_db(transaction=True)
def test_the_status_and_job_reads_answer_as_through_djangos_own_handler(handler, user, auth_client):
    project = ProjectFactory.create(owner=user, status=ProjectStatus.PROCESSING, approval_count=3)
    pages_add(project, 3, status=PageStatus.APPROVED)
    pages_add(project, 2)
    with_job(project, JobStatus.RUNNING)
    job = project.jobs.get()
    paths = [f"/v1/projects/{project.pk}/status", f"/v1/jobs/{job.pk}", f"/v1/projects/{project.pk}/status"]
    expected = [auth_client.get(path) for path in paths]
    token = auth_client._credentials["HTTP_AUTHORIZATION"]

    served = get_all(handler, paths, at_once=False, authorization=token)
    served += get_all(handler, paths, at_once=True, authorization=token)

    assert [response.status_code for response in served] == [200] * 6
    for response, reference in zip(served, expected * 2, strict=True):
        body, reference_body = response.json(), reference.json()
        body.pop("timestamp", None)
        reference_body.pop("timestamp", None)
        assert body == reference_body
        assert response.headers["content-type"] == reference.headers["Content-Type"]


@pytest.mark.django_db(transaction=True)
def test_a_streamed_response_arrives_whole_through_the_handler(handler, user, auth_client):
    project = ProjectFactory.create(owner=user, status=ProjectStatus.PROCESSING)
    pages_add(project, 40, status=PageStatus.APPROVED)
    reference = auth_client.get(f"/v1/projects/{project.pk}").getvalue()
    token = auth_client._credentials["HTTP_AUTHORIZATION"]

    (response,) = get_all(handler, [f"/v1/projects/{project.pk}"], at_once=False, authorization=token)

    assert response.status_code == 200
    body = response.json()
    assert [page["id"] for page in body["pages"]] == [page["id"] for page in json.loads(reference)["pages"]]
    assert len(body["pages"]) == 40
