"""GET /v1/model-status: anonymous, cheap (cached), the engine's state."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.support.problems import assert_problem
from translation.engines import model_status, model_status_forget, model_status_local_drop


def test_it_answers_anonymously_with_state_engine_model_and_detail(settings, api_client):
    settings.TRANSLATION_ENGINE = "echo"

    response = api_client.get("/v1/model-status")

    assert response.status_code == 200
    assert response.json() == {
        "state": "ready",
        "engine": "echo",
        "model": "echo-1",
        "detail": "The echo engine (no real translation).",
    }


def test_credentials_are_not_needed_even_when_a_bad_one_is_sent(settings, api_client):
    settings.TRANSLATION_ENGINE = "echo"

    response = api_client.get("/v1/model-status", HTTP_AUTHORIZATION="Bearer svc_sk_live_nonsense")

    assert response.status_code == 200


def test_a_vllm_server_still_warming_up_reads_starting(vllm, api_client):
    vllm.starting = True

    body = api_client.get("/v1/model-status").json()

    assert (body["state"], body["engine"], body["model"]) == ("starting", "vllm", vllm.model)


def test_the_status_is_cached_for_a_few_seconds_so_reads_do_not_probe_the_server(vllm, api_client):
    vllm.starting = True
    first = api_client.get("/v1/model-status").json()
    vllm.starting = False
    probes_before = len(vllm.requests)

    second = api_client.get("/v1/model-status").json()
    cache.clear()  # the few seconds have passed
    model_status_local_drop()
    third = api_client.get("/v1/model-status").json()

    assert first["state"] == second["state"] == "starting"
    assert len(vllm.requests) > probes_before  # only the third read probed again
    assert third["state"] == "ready"


def test_a_read_within_the_cache_window_sends_nothing_to_the_server(vllm, api_client):
    api_client.get("/v1/model-status")
    probes = len(vllm.requests)

    for _ in range(5):
        api_client.get("/v1/model-status")

    assert len(vllm.requests) == probes


def test_a_process_answers_from_its_own_copy_for_a_moment_and_its_own_forget_at_once(vllm, api_client):
    first = api_client.get("/v1/model-status").json()
    vllm.starting = True
    cache.clear()  # the shared copy dropped elsewhere (another process's forget): not seen here yet
    probes = len(vllm.requests)

    kept = api_client.get("/v1/model-status").json()
    probes_after_kept = len(vllm.requests)
    model_status_forget()  # this process's own forget (the runner here saw the engine go down)
    fresh = api_client.get("/v1/model-status").json()

    assert first["state"] == kept["state"] == "ready"
    assert probes_after_kept == probes
    assert fresh["state"] == "starting"


def test_with_caching_off_every_read_probes(settings, vllm):
    settings.MODEL_STATUS_CACHE_SECONDS = 0
    model_status()
    probes = len(vllm.requests)

    model_status()

    assert len(vllm.requests) > probes


def test_a_change_of_engine_is_seen_at_once(settings, vllm, api_client):
    api_client.get("/v1/model-status")
    settings.TRANSLATION_ENGINE = "echo"

    assert api_client.get("/v1/model-status").json()["engine"] == "echo"


def test_an_unconfigured_vllm_engine_says_so(settings, api_client):
    settings.TRANSLATION_ENGINE = "vllm"
    settings.VLLM_BASE_URL = ""

    body = api_client.get("/v1/model-status").json()

    assert body["state"] == "unconfigured"
    assert "VLLM_BASE_URL" in body["detail"]


def test_other_methods_are_refused_as_problems(api_client):
    assert_problem(api_client.post("/v1/model-status", {}), 405, "method_not_allowed")


@pytest.mark.django_db
def test_the_schema_documents_it_as_an_anonymous_meta_operation(api_client):
    schema = api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    operation = schema["paths"]["/v1/model-status"]["get"]
    assert operation["operationId"] == "get_model_status"
    assert operation["tags"] == ["meta"]
    assert "security" not in operation or {} in operation["security"]
    state = schema["components"]["schemas"]["ModelStatus"]["properties"]["state"]
    assert state["allOf"][0]["$ref"].endswith("/ModelStateEnum")
    enum = schema["components"]["schemas"]["ModelStateEnum"]["enum"]
    assert enum == ["ready", "starting", "throttled", "unconfigured"]


def test_the_unsupported_pair_problem_is_registered(api_client):
    response = api_client.get("/v1/problems/language_pair_unsupported")

    assert response.status_code == 200
    assert response.json()["status"] == 400
