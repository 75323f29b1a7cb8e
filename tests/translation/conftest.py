"""Fixtures of the engine tests: pages, and a local OpenAI-compatible server with the
vllm engine pointed at it (fast retries, short timeouts)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from translation.engines import PageInput


@pytest.fixture
def make_page() -> Callable[..., PageInput]:
    """A PageInput with sensible defaults: page 1, an English text layer, into French."""
    counter = iter(range(1, 10_000))

    def make(**overrides: Any) -> PageInput:
        values: dict[str, Any] = {
            "page_id": f"page-{next(counter)}",
            "index": 1,
            "text": "The house was red and the children played in the garden until it was dark.",
            "image": None,
            "source_language": None,
            "target_language": "fr",
        }
        values.update(overrides)
        return PageInput(**values)

    return make


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def vllm(settings, openai_server: OpenAIServer) -> OpenAIServer:
    """The vllm engine is configured against the local server (returned)."""
    settings.TRANSLATION_ENGINE = "vllm"
    settings.VLLM_BASE_URL = openai_server.url
    settings.VLLM_MODEL = openai_server.model
    settings.VLLM_API_KEY = ""
    settings.VLLM_MAX_RETRIES = 3
    settings.VLLM_RETRY_BASE_SECONDS = 0.01
    settings.VLLM_RETRY_MAX_SECONDS = 0.05
    settings.VLLM_TIMEOUT_SECONDS = 5.0
    settings.VLLM_CONNECT_TIMEOUT_SECONDS = 1.0
    settings.VLLM_STATUS_TIMEOUT_SECONDS = 1.0
    settings.ENGINE_USD_PER_M_INPUT_TOKENS = "0.50"
    settings.ENGINE_USD_PER_M_OUTPUT_TOKENS = "2.00"
    return openai_server


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
