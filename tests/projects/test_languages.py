"""A book's languages against the engine, through the API: create, PATCH (project and
page) and the batch quote refuse what the engine cannot translate, so that process is
never the first to say so; a book whose pages turn out to be in a language the engine
cannot translate ends saying so, without inviting a retry that would fail again.

The echo engine stands in for an engine with few pairs (TRANSLATION_ENGINE_OPTIONS pairs); the local
engine (real Apertium) is run too."""

from __future__ import annotations

import pytest

from projects.models import Job, PageStatus, Project, ProjectStatus, Upload
from tests.factories import ProjectFactory, pages_add
from tests.projects.test_intake_api import text_pdf, upload
from tests.projects.test_processing import credit, process_to_the_end, run_worker
from tests.support.local_engine import needs_local_tools
from tests.support.problems import assert_problem
from wallet.models import Hold

pytestmark = pytest.mark.django_db

FRENCH = "Le chat est sur la table et le chien est dans le jardin, mais la maison est grande. " * 3
ENGLISH = "The cat is on the table and the dog is in the garden, but the house is big. " * 3


@pytest.fixture
def english_spanish_engine(settings):
    """The echo engine translating only English <-> Spanish, like `make run`'s local engine."""
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {"pairs": ["en-es", "es-en"]}


def created(client, **fields):  # type: ignore[no-untyped-def]
    key = upload(client, "book.pdf", text_pdf(2)).json()["uploadKey"]
    return client.post("/v1/projects", {"uploadKey": key, **fields}, format="json")


def test_create_refuses_a_target_the_engine_cannot_produce_and_adopts_nothing(auth_client, english_spanish_engine):
    response = created(auth_client, targetLanguageCode="fr")

    problem = assert_problem(response, 400, "language_pair_unsupported")
    assert "cannot translate" in problem["detail"]
    assert {"source": "en", "target": "es"} in problem["supportedPairs"]
    assert not Project.objects.exists()
    assert Upload.objects.get().adopted_at is None


def test_create_checks_an_explicit_source_and_accepts_auto_detection_when_some_source_reaches_the_target(
    auth_client, english_spanish_engine
):
    refused = created(auth_client, targetLanguageCode="es", sourceLanguageOverride="fr")
    detected = created(auth_client, targetLanguageCode="es")
    explicit = created(auth_client, targetLanguageCode="es", sourceLanguageOverride="en")

    assert_problem(refused, 400, "language_pair_unsupported")
    assert (detected.status_code, detected.json()["sourceLanguageOverride"]) == (201, None)
    assert (explicit.status_code, explicit.json()["sourceLanguageOverride"]) == (201, "en")
    assert Project.objects.count() == 2


def test_create_checks_the_target_taken_from_the_account_preference(auth_client, user, english_spanish_engine):
    user.default_target_language = "ja"
    user.save()

    assert_problem(created(auth_client), 400, "language_pair_unsupported")
    assert not Project.objects.exists()


def test_patch_refuses_a_target_or_an_override_the_engine_cannot_do_and_changes_nothing(
    auth_client, english_spanish_engine
):
    project_id = created(auth_client, targetLanguageCode="es").json()["id"]

    target = auth_client.patch(f"/v1/projects/{project_id}", {"name": "New", "targetLanguageCode": "fr"}, format="json")
    override = auth_client.patch(f"/v1/projects/{project_id}", {"sourceLanguageOverride": "de"}, format="json")
    accepted = auth_client.patch(f"/v1/projects/{project_id}", {"targetLanguageCode": "en"}, format="json")

    assert_problem(target, 400, "language_pair_unsupported")
    assert_problem(override, 400, "language_pair_unsupported")
    assert accepted.json()["targetLanguageCode"] == "en"
    project = Project.objects.get(pk=project_id)
    assert (project.name, project.source_language_override) == ("book", None)


def test_a_new_target_is_checked_against_each_pages_own_source_language(auth_client, settings):
    settings.TRANSLATION_ENGINE_OPTIONS = {"pairs": ["en-es", "es-en", "es-pt"]}
    project_id = created(auth_client, targetLanguageCode="es").json()["id"]
    pages = auth_client.post(f"/v1/projects/{project_id}/normalize").json()["pages"]
    page_url = f"/v1/projects/{project_id}/pages/{pages[1]['id']}"
    assert auth_client.patch(page_url, {"sourceLanguageOverride": "en"}, format="json").status_code == 200

    # Spanish reaches Portuguese, so the book (detected) could; this page's English cannot.
    response = auth_client.patch(f"/v1/projects/{project_id}", {"targetLanguageCode": "pt"}, format="json")

    assert_problem(response, 400, "language_pair_unsupported")
    assert Project.objects.get(pk=project_id).target_language_code == "es"


def test_a_page_override_the_engine_cannot_translate_is_refused(auth_client, english_spanish_engine):
    project_id = created(auth_client, targetLanguageCode="es").json()["id"]
    pages = auth_client.post(f"/v1/projects/{project_id}/normalize").json()["pages"]
    page_url = f"/v1/projects/{project_id}/pages/{pages[0]['id']}"

    refused = auth_client.patch(page_url, {"sourceLanguageOverride": "fr"}, format="json")

    assert_problem(refused, 400, "language_pair_unsupported")
    assert auth_client.get(page_url).json()["sourceLanguageOverride"] is None


def test_the_batch_quote_says_a_book_the_engine_cannot_translate_cannot_start(user, auth_client, settings):
    project = ProjectFactory(owner=user, target_language_code="fr")
    pages_add(project, 3, text_layer=ENGLISH, has_text_layer=True)
    credit(user, "5")
    startable = auth_client.get(f"/v1/projects/{project.pk}/batch-quote").json()
    settings.TRANSLATION_ENGINE_OPTIONS = {"pairs": ["en-es", "es-en"]}  # the engine changed since the book was made

    quote = auth_client.get(f"/v1/projects/{project.pk}/batch-quote").json()
    process = auth_client.post(f"/v1/projects/{project.pk}/process")

    assert (startable["canStart"], startable["blockedOn"]) == (True, None)
    assert (quote["canStart"], quote["blockedOn"]) == (False, "language_pair_unsupported")
    assert "cannot translate" in quote["explanation"]
    assert quote["explanation"] in assert_problem(process, 400, "language_pair_unsupported")["detail"]
    assert not Job.objects.exists()
    assert not Hold.objects.exists()


def test_pages_found_in_a_language_the_engine_cannot_translate_end_the_book_saying_so_without_a_retry(
    user, auth_client, english_spanish_engine
):
    project = ProjectFactory(owner=user, target_language_code="es")
    pages_add(project, 2, text_layer=FRENCH, has_text_layer=True)
    pages_add(project, 1, text_layer=ENGLISH, has_text_layer=True)
    credit(user, "5")

    status = process_to_the_end(auth_client, project)

    assert status["state"] == ProjectStatus.COMPLETED_WITH_ERRORS
    assert "2 pages are in French, and the echo engine cannot translate fr -> es" in status["detail"]
    assert (status["blockedOn"], status["nextAction"]) == (None, "download")
    french = project.pages.get(index=1)
    assert (french.status, french.attempts, french.failure_retryable) == (PageStatus.FAILED, 1, False)
    assert french.failure_reason.startswith("The echo engine cannot translate fr -> es")
    page_body = auth_client.get(f"/v1/projects/{project.pk}/pages/{french.pk}").json()
    assert (page_body["failureCode"], page_body["failureReason"]) == ("language_unsupported", french.failure_reason)
    assert french.detected_source_language == "fr"
    assert project.pages.get(index=3).status == PageStatus.APPROVED

    # A page that was misread gets its language; a retry can help that one, and says so.
    page_url = f"/v1/projects/{project.pk}/pages/{french.pk}"
    assert auth_client.patch(page_url, {"sourceLanguageOverride": "en"}, format="json").status_code == 200
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()

    assert (status["blockedOn"], status["nextAction"]) == ("retry", "retry")
    assert "1 page is in French" in status["detail"]


def test_a_book_whose_engine_lost_its_pair_mid_way_fails_saying_so_and_asks_for_nothing(user, auth_client, settings):
    project = ProjectFactory(owner=user, target_language_code="fr")
    pages_add(project, 3, text_layer=ENGLISH, has_text_layer=True)
    credit(user, "5")
    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    settings.TRANSLATION_ENGINE_OPTIONS = {"pairs": ["en-es", "es-en"]}  # reconfigured while the first batch waited

    run_worker()
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()

    assert status["state"] == ProjectStatus.FAILED
    assert "cannot translate" in status["detail"]
    assert (status["blockedOn"], status["nextAction"]) == (None, None)
    assert project.pages.get(index=1).failure_reason.startswith("The echo engine cannot translate en -> fr")
    assert Job.objects.count() == 1  # the ladder queued nothing after it


@needs_local_tools
def test_the_local_engine_ends_a_french_book_for_spanish_saying_it_cannot_translate_it(user, auth_client, local_engine):
    project = ProjectFactory(owner=user, target_language_code="es")
    pages_add(project, 2, text_layer=FRENCH, has_text_layer=True)
    credit(user, "5")

    status = process_to_the_end(auth_client, project)

    assert status["state"] == ProjectStatus.COMPLETED_WITH_ERRORS
    assert "the local engine cannot translate fr -> es" in status["detail"]
    assert status["nextAction"] != "retry"
    assert not project.pages.filter(status=PageStatus.APPROVED).exists()
