"""The echo engine (tests and benchmarks) and how the configured engine is chosen."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from translation.engines import (
    EngineError,
    EngineUnavailable,
    UnsupportedLanguagePair,
    completeness_problem,
    engine_get,
)


@pytest.fixture
def echo(settings):
    settings.TRANSLATION_ENGINE = "echo"
    settings.ENGINE_USD_PER_M_INPUT_TOKENS = "1"
    settings.ENGINE_USD_PER_M_OUTPUT_TOKENS = "3"
    return settings


def test_the_source_comes_back_behind_a_visible_marker_and_passes_the_completeness_check(echo, make_page):
    page = make_page(text="# Title\n\nSome words here.", target_language="ja")

    result = engine_get().translate(page)

    assert result.translation == "[echo → ja] # Title\n\nSome words here."
    assert result.source_text == page.text
    assert (result.engine, result.model) == ("echo", "echo-1")
    assert completeness_problem(page, result) is None


def test_tokens_come_from_word_counts_and_cost_from_the_token_rates(echo, make_page):
    page = make_page(text="one two three four five six", previous_context="seven eight nine")

    result = engine_get().translate(page)

    assert result.prompt_tokens == 8 + 4  # ceil(6 x 4/3) + ceil(3 x 4/3)
    assert result.completion_tokens == 12  # the marker's 3 words and the 6 of the text
    assert result.cost_usd == Decimal("0.000048")  # (12 x 1 + 12 x 3) / 1e6


def test_the_source_language_is_detected_when_the_page_names_none(echo, make_page):
    detected = engine_get().translate(make_page(text="La casa era roja y los niños jugaban en el jardín."))
    named = engine_get().translate(make_page(text="La casa era roja.", source_language="pt"))

    assert detected.detected_source_language == "es"
    assert named.detected_source_language == "pt"


def test_an_image_page_is_echoed_as_a_marked_note_of_its_size(echo, make_page):
    page = make_page(text="", image=lambda: b"\x89PNG" + b"\0" * 96, index=4)

    result = engine_get().translate(page)

    assert result.translation == "[echo → fr] (page 4: an image of 100 bytes)"
    assert result.source_text == ""
    assert completeness_problem(page, result) is None


def test_pages_set_to_fail_fail_on_their_first_attempt_only(echo, make_page):
    echo.TRANSLATION_ENGINE_OPTIONS = {"fail_pages": [3, 7]}
    engine = engine_get()
    page_three, page_four = make_page(index=3), make_page(index=4)

    with pytest.raises(EngineError) as first:
        engine.translate(page_three)
    second = engine.translate(page_three)
    untouched = engine.translate(page_four)

    assert first.value.retryable is True
    assert not isinstance(first.value, EngineUnavailable)
    assert second.translation.startswith("[echo → fr]")
    assert untouched.translation.startswith("[echo → fr]")


def test_with_zero_fail_attempts_the_pages_always_fail(echo, make_page):
    echo.TRANSLATION_ENGINE_OPTIONS = {"fail_pages": [2], "fail_attempts": 0}
    page = make_page(index=2)

    for _ in range(3):
        with pytest.raises(EngineError):
            engine_get().translate(page)


def test_blank_pages_come_back_empty_and_fail_the_completeness_check(echo, make_page):
    echo.TRANSLATION_ENGINE_OPTIONS = {"blank_pages": [5]}
    page = make_page(index=5)

    result = engine_get().translate(page)

    assert result.translation == ""
    assert "empty" in (completeness_problem(page, result) or "")


def test_an_unavailable_echo_engine_reads_starting_and_makes_pages_wait(echo, make_page):
    echo.TRANSLATION_ENGINE_OPTIONS = {"unavailable": True}

    with pytest.raises(EngineUnavailable):
        engine_get().translate(make_page())

    assert engine_get().status().state == "starting"


def test_the_echo_engine_is_ready(echo):
    status = engine_get().status()

    assert (status.state, status.engine, status.model) == ("ready", "echo", "echo-1")


def test_any_of_the_target_languages_is_supported_and_nothing_else(echo):
    engine = engine_get()

    engine.check_supported(source_language=None, target_language="he")
    with pytest.raises(UnsupportedLanguagePair) as refused:
        engine.check_supported(source_language="en", target_language="tlh")

    assert refused.value.status_code == 400
    assert refused.value.code == "language_pair_unsupported"
    assert {"source": None, "target": "en"} in refused.value.extra["supported_pairs"]


def test_the_engine_is_built_once_per_process_and_again_when_its_settings_change(echo):
    first = engine_get()
    again = engine_get()
    echo.TRANSLATION_ENGINE_OPTIONS = {"delay_seconds": 0.5}
    changed = engine_get()

    assert first is again
    assert changed is not first


def test_an_unknown_engine_name_is_a_configuration_error(settings):
    settings.TRANSLATION_ENGINE = "babelfish"

    with pytest.raises(ImproperlyConfigured, match="babelfish"):
        engine_get()


@pytest.mark.parametrize("name", ["echo", "local", "vllm"])
def test_each_engine_name_builds_that_engine(settings, name):
    settings.TRANSLATION_ENGINE = name

    assert engine_get().name == name
