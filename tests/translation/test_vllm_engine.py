"""The vllm engine against a local server speaking vLLM's OpenAI-compatible protocol."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from email.utils import format_datetime

import pytest

from tests.support.openai_server import Fault, OpenAIServer, fake_translation, png_with_text
from translation.engines import (
    EngineError,
    EngineSaturated,
    EngineUnavailable,
    UnsupportedLanguagePair,
    completeness_problem,
    engine_get,
    model_status,
)
from translation.engines.vllm import retry_delay

PAGE_TEXT = "# Chapter One\n\nThe house was red.\n\n- a *small* garden\n- a dog named Rex"


def assert_retryable_failure(error: pytest.ExceptionInfo[EngineError]) -> None:
    assert not isinstance(error.value, EngineUnavailable), "a page failure, not an outage"
    assert error.value.retryable is True


def test_a_text_page_is_translated_with_the_servers_usage_and_its_measured_cost(vllm, make_page):
    page = make_page(text=PAGE_TEXT)

    result = engine_get().translate(page)

    (request,) = vllm.chat_requests()
    usage = request.reply["usage"]
    assert result.translation == fake_translation(PAGE_TEXT)
    assert result.source_text == PAGE_TEXT
    assert result.engine == "vllm"
    assert result.model == vllm.model
    assert (result.prompt_tokens, result.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
    expected = (Decimal(usage["prompt_tokens"]) * Decimal("0.50") + Decimal(usage["completion_tokens"]) * 2) / 10**6
    assert result.cost_usd == expected.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    assert completeness_problem(page, result) is None


def test_the_request_names_the_model_and_asks_for_a_faithful_markdown_translation(vllm, make_page):
    engine_get().translate(make_page(text=PAGE_TEXT, target_language="de"))

    (request,) = vllm.chat_requests()
    assert request.body["model"] == vllm.model
    assert "German" in request.system_text
    assert "Markdown" in request.system_text
    assert "completely" in request.system_text
    assert f"<page>\n{PAGE_TEXT}\n</page>" in request.user_text
    assert request.image_urls == []


def test_the_prompt_carries_the_glossary_and_the_end_of_the_previous_page(vllm, make_page):
    page = make_page(
        text="Frodo left the Shire at dawn.",
        glossary={"Frodo": "Frodon", "the Shire": "la Comté"},
        previous_context="...and so the long night ended.",
        source_language="en",
    )

    engine_get().translate(page)

    (request,) = vllm.chat_requests()
    assert "- Frodo -> Frodon" in request.user_text
    assert "- the Shire -> la Comté" in request.user_text
    assert "<previous>\n...and so the long night ended.\n</previous>" in request.user_text
    assert "The page is in English (en)." in request.user_text


def test_an_image_page_goes_as_a_base64_png_image_url_part_and_comes_back_transcribed(vllm, make_page):
    png = png_with_text("The garden was green and quiet in the morning.")
    page = make_page(text="", image=lambda: png)

    result = engine_get().translate(page)

    (request,) = vllm.chat_requests()
    (url,) = request.image_urls
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png
    assert "<transcription>" in request.system_text
    assert result.source_text == "The garden was green and quiet in the morning."
    assert result.translation == fake_translation(result.source_text)
    assert result.detected_source_language == "en"
    assert completeness_problem(page, result) is None


def test_the_image_is_loaded_only_for_a_page_without_a_text_layer(vllm, make_page):
    def never() -> bytes:
        raise AssertionError("a page with a text layer must not load its image")

    result = engine_get().translate(make_page(image=never))

    assert result.translation
    assert vllm.chat_requests()[0].image_urls == []


def test_the_language_the_model_reports_is_kept_unless_the_page_names_one(settings, vllm, make_page):
    vllm.source_language = "de"

    detected = engine_get().translate(make_page(text="Das Haus war rot und der Garten war groß."))
    named = engine_get().translate(make_page(text="Das Haus war rot.", source_language="nl"))

    assert detected.detected_source_language == "de"
    assert named.detected_source_language == "nl"


def test_a_page_with_neither_text_nor_image_sends_nothing_and_costs_nothing(vllm, make_page):
    result = engine_get().translate(make_page(text="  \n", image=None))

    assert vllm.chat_requests() == []
    assert (result.translation, result.cost_usd) == ("", Decimal("0.000000"))


def test_429s_are_retried_and_the_model_status_then_reads_throttled(vllm, make_page):
    vllm.fail_next(Fault.http(429, retry_after="0"), Fault.http(429))

    result = engine_get().translate(make_page())

    assert len(vllm.chat_requests()) == 3
    assert result.translation
    assert model_status().state == "throttled"


def test_5xx_answers_and_dropped_connections_are_retried(vllm, make_page):
    vllm.fail_next(Fault.http(500), Fault.disconnect(), Fault.http(502))

    result = engine_get().translate(make_page())

    assert len(vllm.chat_requests()) == 4
    assert result.translation == fake_translation(make_page().text)


def test_a_server_that_keeps_failing_fails_the_page_as_retryable(vllm, make_page):
    vllm.fail_next(*[Fault.http(500)] * 4)

    with pytest.raises(EngineError) as error:
        engine_get().translate(make_page())

    assert_retryable_failure(error)
    assert len(vllm.chat_requests()) == 4  # the first try and VLLM_MAX_RETRIES=3 retries


def test_429_after_every_retry_is_a_saturated_engine_not_a_page_failure(vllm, make_page):
    vllm.fail_next(*[Fault.http(429, retry_after="0")] * 4)

    with pytest.raises(EngineSaturated) as error:
        engine_get().translate(make_page())

    assert isinstance(error.value, EngineUnavailable)  # the book waits; no attempt is used
    assert "429" in str(error.value)
    assert len(vllm.chat_requests()) == 4
    assert model_status().state == "throttled"


def test_503_after_every_retry_from_a_healthy_server_reads_throttled(vllm, make_page):
    vllm.fail_next(*[Fault.http(503)] * 4)

    with pytest.raises(EngineSaturated):
        engine_get().translate(make_page())

    assert model_status().state == "throttled"


def test_an_answer_that_comes_too_late_is_a_retryable_page_failure(settings, vllm, make_page):
    settings.VLLM_TIMEOUT_SECONDS = 0.3
    vllm.fail_next(Fault.timeout(3))

    with pytest.raises(EngineError) as error:
        engine_get().translate(make_page())

    assert_retryable_failure(error)
    assert len(vllm.chat_requests()) == 1  # a slow page is not sent again at once


def test_a_garbage_body_is_a_retryable_page_failure(vllm, make_page):
    vllm.fail_next(Fault.garbage())

    with pytest.raises(EngineError) as error:
        engine_get().translate(make_page())

    assert_retryable_failure(error)


def test_a_reply_cut_off_at_max_tokens_is_refused(vllm, make_page):
    vllm.fail_next(
        Fault.reply("<source_language>en</source_language>\n<translation>\nLa maison", finish_reason="length")
    )

    with pytest.raises(EngineError) as error:
        engine_get().translate(make_page())

    assert "VLLM_MAX_TOKENS" in str(error.value)
    assert error.value.retryable is False


def test_an_image_reply_without_the_asked_sections_is_a_page_failure(vllm, make_page):
    vllm.fail_next(Fault.reply("I see a picture of a garden."))

    with pytest.raises(EngineError) as error:
        engine_get().translate(make_page(text="", image=lambda: png_with_text("A garden.")))

    assert_retryable_failure(error)


def test_a_reply_with_commentary_is_caught_by_the_completeness_check(vllm, make_page):
    vllm.fail_next(Fault.reply("Sure! Here is the translation:\n\nLa maison était rouge."))
    page = make_page()

    result = engine_get().translate(page)

    assert "commentary" in (completeness_problem(page, result) or "")


def test_a_starting_server_makes_the_page_wait(vllm, make_page):
    vllm.starting = True

    with pytest.raises(EngineUnavailable):
        engine_get().translate(make_page())

    assert model_status().state == "starting"


def test_an_unreachable_server_makes_the_page_wait_and_reads_starting(settings, vllm, make_page, unused_port):
    settings.VLLM_BASE_URL = f"http://127.0.0.1:{unused_port}"

    with pytest.raises(EngineUnavailable):
        engine_get().translate(make_page())
    status = model_status()

    assert status.state == "starting"
    assert "cannot be reached" in status.detail


def test_without_a_base_url_the_engine_is_unconfigured_and_pages_wait(settings, vllm, make_page):
    settings.VLLM_BASE_URL = ""

    with pytest.raises(EngineUnavailable):
        engine_get().translate(make_page())
    status = model_status()

    assert (status.state, status.engine) == ("unconfigured", "vllm")
    assert "VLLM_BASE_URL" in status.detail


def test_the_status_is_ready_when_healthy_and_serving_the_model(vllm):
    status = engine_get().status()

    assert (status.state, status.engine, status.model) == ("ready", "vllm", vllm.model)


def test_the_status_reads_starting_while_the_model_is_not_listed(settings, vllm):
    settings.VLLM_MODEL = "another/model"

    status = engine_get().status()

    assert status.state == "starting"
    assert vllm.model in status.detail  # what it does serve


def test_the_status_reads_starting_during_the_servers_warm_up(settings):
    with OpenAIServer(starting_seconds=60) as server:
        settings.TRANSLATION_ENGINE, settings.VLLM_BASE_URL, settings.VLLM_MODEL = "vllm", server.url, server.model
        during = engine_get().status()
        server.starting = False
        after = engine_get().status()

    assert during.state == "starting"
    assert "503" in during.detail
    assert after.state == "ready"


def test_a_wrong_model_name_makes_pages_wait(settings, vllm, make_page):
    settings.VLLM_MODEL = "not/served"

    with pytest.raises(EngineUnavailable) as error:
        engine_get().translate(make_page())

    assert "not/served" in str(error.value)


def test_a_request_the_server_refuses_fails_the_page_for_good(vllm, make_page):
    vllm.fail_next(Fault.http(400))

    with pytest.raises(EngineError) as error:
        engine_get().translate(make_page())

    assert error.value.retryable is False
    assert len(vllm.chat_requests()) == 1


def test_the_api_key_is_sent_as_a_bearer_token_and_a_wrong_one_reads_unconfigured(settings, make_page):
    with OpenAIServer(api_key="sk-right") as server:
        settings.TRANSLATION_ENGINE, settings.VLLM_BASE_URL, settings.VLLM_MODEL = "vllm", server.url, server.model
        settings.VLLM_API_KEY = "sk-right"
        translated = engine_get().translate(make_page())
        ready = engine_get().status()
        settings.VLLM_API_KEY = "sk-wrong"
        refused = engine_get().status()
        with pytest.raises(EngineUnavailable):
            engine_get().translate(make_page())

    assert translated.translation
    assert server.chat_requests()[0].headers["Authorization"] == "Bearer sk-right"
    assert ready.state == "ready"
    assert refused.state == "unconfigured"


def test_a_base_url_ending_in_v1_is_accepted(settings, vllm, make_page):
    settings.VLLM_BASE_URL = vllm.url + "/v1/"

    assert engine_get().translate(make_page()).translation
    assert engine_get().status().state == "ready"


def test_pages_translated_at_once_share_a_pool_of_engine_concurrency_connections(settings, vllm, make_page):
    settings.ENGINE_CONCURRENCY = 3
    vllm.latency = 0.3
    engine = engine_get()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(engine.translate, [make_page(index=n) for n in range(1, 9)]))

    assert len(results) == 8
    assert all(result.translation for result in results)
    assert vllm.max_in_flight == 3


def test_requests_beyond_the_servers_capacity_wait_their_turn(settings, make_page):
    with OpenAIServer(capacity=2, latency=0.3) as server:
        settings.TRANSLATION_ENGINE, settings.VLLM_BASE_URL, settings.VLLM_MODEL = "vllm", server.url, server.model
        settings.ENGINE_CONCURRENCY = 6
        engine = engine_get()
        with ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(engine.translate, [make_page(index=n) for n in range(1, 7)]))

    assert all(result.translation for result in results)
    assert server.max_in_flight == 2
    assert len(server.chat_requests()) == 6


def test_check_supported_takes_any_source_into_a_target_language(vllm):
    engine = engine_get()

    engine.check_supported(source_language=None, target_language="ja")
    engine.check_supported(source_language="fi", target_language="en")
    with pytest.raises(UnsupportedLanguagePair):
        engine.check_supported(source_language="en", target_language="xx")


def test_retry_delay_honours_retry_after_in_seconds_or_as_a_date_up_to_the_cap():
    in_five = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)

    assert retry_delay(attempt=0, retry_after="2", base_seconds=1, max_seconds=30) == 2
    assert retry_delay(attempt=0, retry_after="120", base_seconds=1, max_seconds=30) == 30
    assert 3 <= retry_delay(attempt=0, retry_after=in_five, base_seconds=1, max_seconds=30) <= 5
    assert retry_delay(attempt=0, retry_after="-3", base_seconds=1, max_seconds=30) == 0


def test_retry_delay_backs_off_exponentially_with_jitter_up_to_the_cap():
    delays = [retry_delay(attempt=attempt, retry_after=None, base_seconds=1, max_seconds=30) for attempt in range(7)]

    for attempt, delay in enumerate(delays):
        ceiling = min(2**attempt, 30)
        assert ceiling / 2 <= delay <= ceiling
    assert retry_delay(attempt=1, retry_after="soon", base_seconds=1, max_seconds=30) <= 2


def test_a_structured_page_comes_back_with_its_code_as_it_was(vllm, make_page):
    # The stand-in "translates" every word, code included; the engine puts the code back.
    text = "Call `bz_open` first.\n\n```\nint main(void)\n```"
    page = make_page(text=text, structured=True)

    result = engine_get().translate(page)

    assert result.translation == "llaC `bz_open` tsrif.\n\n```\nint main(void)\n```"
    assert completeness_problem(page, result) is None


def test_a_reply_that_lost_inline_code_is_a_retryable_page_failure(vllm, make_page):
    vllm.fail_next(Fault.reply("<source_language>en</source_language><translation>Llama primero.</translation>"))

    with pytest.raises(EngineError) as failure:
        engine_get().translate(make_page(text="Call `bz_open` first.", structured=True))

    assert "`bz_open`" in str(failure.value)
    assert_retryable_failure(failure)
