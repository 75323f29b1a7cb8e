"""GET /v1/languages: the target languages, and what the configured engine translates and
reads, for each engine; /v1/meta links it."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.support.local_engine import needs_local_tools

pytestmark = pytest.mark.django_db


def test_it_answers_anonymously_with_the_twenty_targets_and_their_names(api_client):
    response = api_client.get("/v1/languages", HTTP_AUTHORIZATION="Bearer svc_sk_live_nonsense")

    assert response.status_code == 200
    targets = response.json()["targets"]
    assert [target["code"] for target in targets] == settings.TARGET_LANGUAGES
    assert {"code": "uk", "name": "Ukrainian"} in targets
    assert all(target["name"] and target["name"] != target["code"] for target in targets)


def test_the_echo_engine_translates_any_source_into_every_target_and_reads_no_images(api_client):
    engine = api_client.get("/v1/languages").json()["engine"]

    assert engine == {
        "name": "echo",
        "targets": settings.TARGET_LANGUAGES,
        "pairs": [{"source": None, "targets": settings.TARGET_LANGUAGES}],
        "ocrLanguages": [],
    }


def test_an_engine_with_few_pairs_lists_them_and_only_the_targets_they_reach(api_client, settings):
    settings.TRANSLATION_ENGINE_OPTIONS = {"pairs": ["en-es", "es-en", "es-pt", "ca-es", "en-xx"]}

    engine = api_client.get("/v1/languages").json()["engine"]

    assert engine["targets"] == ["en", "es", "pt"]
    assert engine["pairs"] == [
        {"source": "ca", "targets": ["es"]},
        {"source": "en", "targets": ["es"]},
        {"source": "es", "targets": ["en", "pt"]},
    ]


def test_the_vllm_engine_reads_the_configured_ocr_languages_without_asking_the_server(api_client, settings):
    settings.TRANSLATION_ENGINE = "vllm"
    settings.VLLM_BASE_URL = "http://127.0.0.1:9"  # nothing listens: the answer must not need it
    settings.VLLM_OCR_LANGUAGES = ["en", "de", "ja"]

    engine = api_client.get("/v1/languages").json()["engine"]

    assert engine["name"] == "vllm"
    assert engine["pairs"] == [{"source": None, "targets": settings.TARGET_LANGUAGES}]
    assert engine["ocrLanguages"] == ["en", "de", "ja"]


@needs_local_tools
def test_the_local_engine_lists_the_installed_apertium_pairs_and_tesseract_languages(api_client, local_engine):
    engine = api_client.get("/v1/languages").json()["engine"]

    assert engine["name"] == "local"
    assert {"source": "en", "targets": ["es"]} in engine["pairs"]
    assert {"en", "es"} <= set(engine["targets"])
    assert "ja" not in engine["targets"]  # no apertium pair reaches Japanese
    assert "en" in engine["ocrLanguages"]  # eng.traineddata, as ISO 639-1
    assert "osd" not in engine["ocrLanguages"]


def test_the_local_engine_without_its_programs_translates_nothing(api_client, settings):
    settings.TRANSLATION_ENGINE = "local"
    settings.TESSERACT_COMMAND, settings.APERTIUM_COMMAND = "/nonexistent/tesseract", "/nonexistent/apertium"

    engine = api_client.get("/v1/languages").json()["engine"]

    assert engine == {"name": "local", "targets": [], "pairs": [], "ocrLanguages": []}


def test_meta_links_the_languages(api_client):
    link = api_client.get("/v1/meta").json()["languagesUrl"]

    assert link == f"{settings.PUBLIC_BASE_URL}/v1/languages"
    assert api_client.get(link.removeprefix(settings.PUBLIC_BASE_URL)).status_code == 200
