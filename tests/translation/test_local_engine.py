"""The local engine with the real Tesseract and Apertium (`make test` installs them through
system_tools_ensure; the tests that need them are skipped only where they are absent)."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.support.local_engine import needs_local_tools
from translation.engines import (
    EngineUnavailable,
    PageLanguageUnsupported,
    UnsupportedLanguagePair,
    completeness_problem,
    engine_get,
)
from translation.engines.local import apertium_pairs


def page_image(*lines: str) -> bytes:
    image = Image.new("L", (1400, 120 + 110 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=56)
    for number, line in enumerate(lines):
        draw.text((60, 60 + 110 * number), line, fill=0, font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@needs_local_tools
def test_english_text_is_translated_into_spanish_keeping_its_markdown(local_engine, make_page):
    page = make_page(text="# The House\n\nThe house is red.\n\n- a small garden\n- a big dog", target_language="es")

    result = engine_get().translate(page)

    lines = result.translation.splitlines()
    assert lines[0].startswith("# ")
    assert "La casa es roja." in result.translation
    assert sum(line.startswith("- ") for line in lines) == 2
    assert "*" not in result.translation  # Apertium's unknown-word marks are off
    assert (result.engine, result.detected_source_language) == ("local", "en")
    assert result.model == "apertium eng-spa"
    assert result.prompt_tokens > 0
    assert result.cost_usd > 0
    assert completeness_problem(page, result) is None


@needs_local_tools
def test_glossary_terms_come_out_as_the_glossary_says(local_engine, make_page):
    page = make_page(
        text="Bilbo Baggins left the house with Gandalf.",
        target_language="es",
        source_language="en",
        glossary={"Bilbo Baggins": "Bilbo Bolsón", "Gandalf": "Gandalf el Gris"},
    )

    result = engine_get().translate(page)

    assert "Bilbo Bolsón" in result.translation
    assert "Gandalf el Gris" in result.translation
    assert "⟦" not in result.translation


@needs_local_tools
def test_a_page_image_is_read_with_tesseract_then_translated(local_engine, make_page):
    png = page_image("The house is red.", "The dog is big.")
    page = make_page(text="", image=lambda: png, target_language="es", source_language="en")

    result = engine_get().translate(page)

    assert "The house is red." in result.source_text
    assert "La casa es roja." in result.translation
    assert result.model == "tesseract+apertium eng-spa"
    assert completeness_problem(page, result) is None


@needs_local_tools
def test_a_page_already_in_the_target_language_passes_through(local_engine, make_page):
    page = make_page(text="La casa es roja y el perro es grande.", source_language="es", target_language="es")

    result = engine_get().translate(page)

    assert result.translation == page.text
    assert completeness_problem(page, result) is None


@needs_local_tools
def test_installed_pairs_are_supported_and_others_refused_with_the_list(local_engine):
    engine = engine_get()

    engine.check_supported(source_language="en", target_language="es")
    engine.check_supported(source_language=None, target_language="es")
    engine.check_supported(source_language="", target_language="es")
    engine.check_supported(source_language="ja", target_language="ja")
    with pytest.raises(UnsupportedLanguagePair) as refused:
        engine.check_supported(source_language="en", target_language="ja")
    with pytest.raises(UnsupportedLanguagePair):
        engine.check_supported(source_language=None, target_language="ja")

    assert refused.value.status_code == 400
    assert {"source": "en", "target": "es"} in refused.value.extra["supported_pairs"]
    assert "en->es" in refused.value.detail


@needs_local_tools
def test_a_page_detected_in_a_language_without_a_pair_fails_for_good(local_engine, make_page):
    page = make_page(text="Das Haus ist rot und der Hund ist groß, aber die Katze ist klein.", target_language="es")

    with pytest.raises(PageLanguageUnsupported) as error:
        engine_get().translate(page)

    assert error.value.retryable is False
    assert str(error.value).startswith("The local engine cannot translate de -> es (German into Spanish)")
    assert (error.value.code, error.value.source_language, error.value.target_language) == (
        "language_unsupported",
        "de",
        "es",
    )


@needs_local_tools
def test_capabilities_are_the_installed_pairs_and_traineddata_as_iso_639_1(local_engine):
    capabilities = engine_get().capabilities()

    assert "es" in capabilities.pairs["en"]
    assert "en" in capabilities.pairs["es"]
    assert "en" in capabilities.ocr_languages
    assert capabilities.translates(source_language=None, target_language="es")
    assert capabilities.translates(source_language="ja", target_language="ja")  # passes through
    assert not capabilities.translates(source_language="en", target_language="ja")


@needs_local_tools
def test_the_status_is_ready_and_lists_the_installed_pairs(local_engine):
    status = engine_get().status()

    assert (status.state, status.engine) == ("ready", "local")
    assert "en->es" in status.detail


def test_missing_programs_make_the_engine_unconfigured_and_image_pages_wait(local_engine, make_page):
    local_engine.TESSERACT_COMMAND = "/nonexistent/tesseract"

    status = engine_get().status()
    with pytest.raises(EngineUnavailable):
        engine_get().translate(make_page(text="", image=lambda: page_image("Hello.")))

    assert status.state == "unconfigured"
    assert "tesseract-ocr" in status.detail


def test_without_apertium_no_pair_is_supported(local_engine):
    local_engine.APERTIUM_COMMAND = "/nonexistent/apertium"

    with pytest.raises(UnsupportedLanguagePair):
        engine_get().check_supported(source_language="en", target_language="es")
    assert engine_get().status().state == "unconfigured"


def test_apertium_mode_names_become_iso_639_1_pairs_without_variants():
    modes = ["eng-spa", "spa-eng", "spa-eng_US", "es-pt", "es-pt_BR", "eco-es-fr", "fr-es", "en-es", "xxx-yyy"]

    pairs = apertium_pairs(modes)

    assert pairs == {("en", "es"): "eng-spa", ("es", "en"): "spa-eng", ("es", "pt"): "es-pt", ("fr", "es"): "fr-es"}
