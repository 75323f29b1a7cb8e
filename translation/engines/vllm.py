"""The `vllm` engine: any OpenAI-compatible chat-completions server (vLLM in production;
also SGLang, llama.cpp's server, Ollama) serving a vision-language model.

- Text pages go as text; pages without a text layer go as a base64 PNG `image_url` part,
  and the model transcribes and translates them in one reply.
- One shared httpx.Client per process, its pool sized to ENGINE_CONCURRENCY, so the batch
  runner's threads keep that many requests in flight (vLLM batches them continuously);
  its sockets set TCP_NODELAY, so no request waits on Nagle's algorithm.
  Status probes use a small client of their own so they never queue behind long pages.
- 429, 5xx and connection errors are retried with exponential backoff and jitter,
  honouring Retry-After, up to VLLM_MAX_RETRIES. What is left after the retries: 429 or
  503 is EngineSaturated, and a server that cannot be reached, refuses the key or does not
  serve the model EngineUnavailable (the book waits, no page attempt used); any other 5xx
  or a broken connection is a retryable EngineError for the page while the server's /health
  still answers 200, and EngineUnavailable when it does not (a dead engine core answers 500
  to everything: the book waits instead of spending every page's attempts); a reply that
  cannot be read is a retryable EngineError; any other 4xx, and a reply cut at
  VLLM_MAX_TOKENS, a non-retryable one (the ladder does not send the page again).
- A 429, or 503s still after the retries, are remembered in the shared cache for
  VLLM_THROTTLED_SECONDS, so every process's model status reads "throttled" (while /health
  is fine; a server still warming up reads "starting"), not only the worker's that saw it.
"""

from __future__ import annotations

import email.utils
import logging
import random
import socket
import time
from datetime import UTC, datetime
from typing import Any

import httpx
from django.core.cache import cache

from translation.engines.base import (
    EngineCapabilities,
    EngineError,
    EngineSaturated,
    EngineStatus,
    EngineUnavailable,
    ModelState,
    PageInput,
    PageReading,
    PageResult,
    any_source_capabilities,
    cost_usd,
    tokens_estimate,
)
from translation.engines.markup import literals_restored
from translation.engines.prompts import chat_messages, reply_parse
from translation.engines.tesseract_reader import TesseractReader
from translation.languages import language_detect

logger = logging.getLogger(__name__)

NAME = "vllm"
CHAT_PATH = "/v1/chat/completions"


def retry_delay(*, attempt: int, retry_after: str | None, base_seconds: float, max_seconds: float) -> float:
    """Seconds to wait before retry number `attempt + 1`: the server's Retry-After (seconds
    or an HTTP date) when it sent one, else base x 2^attempt with jitter; never over the cap."""
    if retry_after:
        told = _retry_after_seconds(retry_after)
        if told is not None:
            return min(max(told, 0.0), max_seconds)
    backoff = min(base_seconds * (2.0**attempt), max_seconds)
    return backoff * (0.5 + random.random() / 2)  # noqa: S311  (jitter, not a secret)


def _retry_after_seconds(value: str) -> float | None:
    try:
        return float(value.strip())
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class VllmEngine:
    name = NAME

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        concurrency: int,
        connect_timeout: float,
        timeout: float,
        status_timeout: float,
        max_retries: int,
        retry_base_seconds: float,
        retry_max_seconds: float,
        max_tokens: int,
        temperature: float,
        throttled_seconds: int,
        ocr_languages: tuple[str, ...] = (),
        intake_reader: TesseractReader | None = None,
    ) -> None:
        self.intake_reader = intake_reader
        self.root = _root(base_url)
        self.model = model
        self.max_retries = max_retries
        self.retry_base_seconds = retry_base_seconds
        self.retry_max_seconds = retry_max_seconds
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.throttled_seconds = throttled_seconds
        self._capabilities = any_source_capabilities(engine=NAME, ocr_languages=ocr_languages)
        self._throttled_key = f"translation:vllm:throttled:{self.root}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        pool = max(1, concurrency)
        self._client = httpx.Client(
            base_url=self.root or "http://unconfigured.invalid",
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            # TCP_NODELAY: a request's body goes out at once, not after the server's delayed
            # ACK of its headers.
            transport=httpx.HTTPTransport(
                limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            ),
        )
        self._probe = httpx.Client(
            base_url=self.root or "http://unconfigured.invalid",
            headers=headers,
            timeout=httpx.Timeout(status_timeout),
            limits=httpx.Limits(max_connections=2, max_keepalive_connections=2),
        )

    def reads_at_intake(self) -> bool:
        return self.intake_reader is not None and self.intake_reader.program() is not None

    def page_read(self, image: bytes, *, language: str | None) -> PageReading | None:
        """The page image read with Tesseract at intake (VLLM_INTAKE_OCR), so a scanned book
        is structured like a text PDF (running headers out, paragraphs across pages) and its
        pages are translated as text; None (the model reads the image itself when it
        translates the page) without Tesseract, or when the reading cannot be trusted."""
        if self.intake_reader is None or not self.intake_reader.languages():
            return None
        reading = self.intake_reader.read(image, language=language)
        if reading.warnings:
            return None
        return PageReading(layout=reading.layout, warnings=())

    # --- status ---------------------------------------------------------------------

    def status(self) -> EngineStatus:
        if not self.root:
            return self._status(ModelState.UNCONFIGURED, "VLLM_BASE_URL is not set: no translation server to use.")
        try:
            health = self._probe.get("/health")
            if health.status_code >= 500:
                cache.delete(self._throttled_key)  # its 503s came from the warm-up, not from load
                return self._status(
                    ModelState.STARTING,
                    f"The server at {self.root} is up but not ready yet (GET /health answered {health.status_code}).",
                )
            models = self._probe.get("/v1/models")
        except httpx.HTTPError as error:
            return self._status(
                ModelState.STARTING,
                f"The server at {self.root} cannot be reached yet ({type(error).__name__}): the GPU node may be "
                "booting or vLLM still loading the model.",
            )
        if models.status_code in (401, 403):
            return self._status(ModelState.UNCONFIGURED, f"The server at {self.root} refused VLLM_API_KEY.")
        served = self._served_models(models)
        if served is None:
            return self._status(
                ModelState.STARTING, f"The server at {self.root} has no model list yet (HTTP {models.status_code})."
            )
        if self.model not in served:
            serves = ", ".join(served) if served else "nothing yet"
            return self._status(
                ModelState.STARTING,
                f"The model {self.model} is not served at {self.root} yet (it serves: {serves}).",
            )
        if cache.get(self._throttled_key):
            return self._status(
                ModelState.THROTTLED,
                f"The server at {self.root} answered 429 or 503 (at capacity) in the last "
                f"{self.throttled_seconds} seconds; pages are retried with backoff, then the book waits.",
            )
        return self._status(ModelState.READY, f"{self.model} is served at {self.root}.")

    def _status(self, state: str, detail: str) -> EngineStatus:
        return EngineStatus(state=state, engine=self.name, model=self.model, detail=detail)

    @staticmethod
    def _served_models(response: httpx.Response) -> list[str] | None:
        if response.status_code != 200:
            return None
        try:
            return [str(entry["id"]) for entry in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            return None

    # --- translation ------------------------------------------------------------------

    def capabilities(self) -> EngineCapabilities:
        """Any source into every target language (a multilingual model); the languages it
        reads from images are VLLM_OCR_LANGUAGES (the served model's, as its card says)."""
        return self._capabilities

    def check_supported(self, *, source_language: str | None, target_language: str) -> None:
        self._capabilities.check(source_language=source_language, target_language=target_language)

    def translate(self, page: PageInput) -> PageResult:
        if not self.root:
            raise EngineUnavailable("The vllm engine has no server: VLLM_BASE_URL is not set.")
        image = None
        if not page.has_text:
            if page.image is None:
                return self._blank(page)
            image = page.image()
        body = {
            "model": self.model,
            "messages": chat_messages(page, image_png=image),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        data = self._completion(body)
        content, finish_reason = self._content(data)
        if finish_reason == "length":
            raise EngineError(
                f"The model's reply reached VLLM_MAX_TOKENS ({self.max_tokens}) before the page ended.",
                retryable=False,
            )
        reply = reply_parse(content, image_page=image is not None)
        source_text = page.text if image is None else (reply.transcription or "")
        translation = reply.translation
        if page.structured and image is None:
            translation, lost = literals_restored(page.text, translation)
            if lost:
                raise EngineError(f"The model's translation lost code it must keep verbatim: {lost[0][:200]}")
        usage = data.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        prompt_tokens = _int(usage.get("prompt_tokens"), default=tokens_estimate(str(body["messages"])))
        completion_tokens = _int(usage.get("completion_tokens"), default=tokens_estimate(content))
        return PageResult(
            translation=translation,
            source_text=source_text,
            detected_source_language=page.source_language or reply.source_language or language_detect(source_text),
            engine=self.name,
            model=str(data.get("model") or self.model),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_usd(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        )

    def _blank(self, page: PageInput) -> PageResult:
        """A page with neither text nor image: nothing to send, nothing to charge."""
        return PageResult(
            translation="",
            source_text="",
            detected_source_language=page.source_language,
            engine=self.name,
            model=self.model,
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=cost_usd(prompt_tokens=0, completion_tokens=0),
        )

    @staticmethod
    def _content(data: dict[str, Any]) -> tuple[str, str | None]:
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as error:
            raise EngineError("The server's reply had no message (no choices).") from error
        if not isinstance(content, str):
            raise EngineError("The server's reply had an empty message.")
        return content, choice.get("finish_reason")

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/chat/completions with retries; the decoded JSON body of a 200."""
        attempt = 0
        while True:
            retry_after: str | None = None
            try:
                response = self._client.post(CHAT_PATH, json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                if attempt >= self.max_retries:
                    raise EngineUnavailable(
                        f"The translation server at {self.root} cannot be reached ({type(error).__name__})."
                    ) from error
            except httpx.TimeoutException as error:
                raise EngineError(f"The server did not answer within {self.timeout:g} seconds.") from error
            except httpx.HTTPError as error:  # the connection broke mid-answer
                if attempt >= self.max_retries:
                    self._unhealthy_raise(f"the connection failed ({type(error).__name__})")
                    raise EngineError(f"The connection to the server failed ({type(error).__name__}).") from error
            else:
                if response.status_code == 200:
                    return self._decoded(response)
                self._refusal_raise(response, final=attempt >= self.max_retries)
                retry_after = response.headers.get("Retry-After")
            delay = retry_delay(
                attempt=attempt,
                retry_after=retry_after,
                base_seconds=self.retry_base_seconds,
                max_seconds=self.retry_max_seconds,
            )
            logger.info("vllm: retrying a page in %.2fs (attempt %d)", delay, attempt + 1)
            time.sleep(delay)
            attempt += 1

    def _refusal_raise(self, response: httpx.Response, *, final: bool) -> None:
        """Raises for a non-200 answer, unless it is worth another try and tries are left."""
        status = response.status_code
        message = _error_message(response)
        if status == 429 or (status == 503 and final):
            cache.set(self._throttled_key, True, timeout=self.throttled_seconds)
        if status in (429, 503):
            if final:
                raise EngineSaturated(
                    f"The server at {self.root} is at capacity or not ready (HTTP {status}) after "
                    f"{self.max_retries} retries: {message}"
                )
            return
        if status >= 500:
            if final:
                self._unhealthy_raise(f"it answered HTTP {status}: {message}")
                raise EngineError(f"The server failed (HTTP {status}) after {self.max_retries} retries: {message}")
            return
        if status in (401, 403):
            raise EngineUnavailable(f"The server at {self.root} refused VLLM_API_KEY (HTTP {status}).")
        if status == 404:
            raise EngineUnavailable(f"The server at {self.root} does not serve {self.model} (404): {message}")
        raise EngineError(f"The server refused the page (HTTP {status}): {message}", retryable=False)

    def _unhealthy_raise(self, what: str) -> None:
        """After the retries of a 5xx or a broken connection: EngineUnavailable when the
        server's /health does not answer 200 either (the server is failing, not this page)."""
        try:
            health = self._probe.get("/health").status_code
        except httpx.HTTPError:
            health = None
        if health != 200:
            answered = "no answer" if health is None else f"HTTP {health}"
            raise EngineUnavailable(f"The server at {self.root} is failing ({what}; GET /health: {answered})."[:500])

    @staticmethod
    def _decoded(response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as error:
            raise EngineError("The server's reply was not JSON.") from error
        if not isinstance(data, dict):
            raise EngineError("The server's reply was not a chat completion.")
        return data


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:300]
        return str(error)[:300]
    return str(body)[:300]


def _int(value: object, *, default: int) -> int:
    return value if isinstance(value, int) and value >= 0 else default
