import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db


def test_meta_answers_anonymously_with_the_discovery_body(api_client):
    response = api_client.get("/v1/meta")

    assert response.status_code == 200
    assert response.json() == {
        "apiVersion": "1.0",
        "batchLadder": [1, 5, 25, 100],
        "finalBatch": "remaining",
        "exportFormats": ["All", "Markdown", "PlainText", "Html", "Epub", "Docx", "Pdf", "Archive"],
        "problemTypeBase": settings.PROBLEM_TYPE_BASE,
        "languagesUrl": f"{settings.PUBLIC_BASE_URL}/v1/languages",
    }


def test_every_problem_type_resolves_to_its_description(api_client):
    listing = api_client.get("/v1/problems").json()
    codes = {problem["code"] for problem in listing}
    assert {"validation_error", "invalid_credentials", "forbidden", "not_found", "rate_limited"} <= codes

    for problem in listing:
        assert problem["type"] == f"{settings.PROBLEM_TYPE_BASE}/{problem['code']}"
        detail = api_client.get(f"/v1/problems/{problem['code']}")
        assert detail.status_code == 200
        assert detail.json()["status"] == problem["status"]
