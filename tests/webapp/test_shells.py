"""The web app's page shells, without a browser: every address answers its page under a
strict Content-Security-Policy, anything else outside /v1 is the app's 404 page, the
shell offers only what the deployment has configured, and the modules are valid
JavaScript that put data into pages as text only."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import html5lib
import pytest
from django.test import Client

from tests.e2e.processes import REPO_ROOT

MODULES = REPO_ROOT / "webapp" / "static" / "webapp"
PAGES = {
    "/": "home.js",
    "/signup": "signup.js",
    "/signin": "signin.js",
    "/books": "books.js",
    "/books/6f1c2d3e-0000-4000-8000-000000000001": "books_detail.js",
    "/books/6f1c2d3e-0000-4000-8000-000000000001/pages/3": "books_page.js",
    "/wallet": "wallet.js",
    "/wallet/top-up/tu_abc123": "top_up.js",
    "/settings": "settings.js",
    "/settings/developer": "developer.js",
    "/settings/spending": "spending.js",
}
INLINE_SCRIPT = re.compile(r"<script nonce=\"([^\"]+)\">(.*?)</script>", re.DOTALL)


def shell(client: Client, path: str, status: int = 200) -> tuple[str, str]:
    response = client.get(path)
    assert response.status_code == status, path
    assert response["Content-Type"].startswith("text/html")
    assert response["Cache-Control"] == "no-store"
    return response.content.decode(), response["Content-Security-Policy"]


@pytest.mark.parametrize(("path", "module"), PAGES.items())
def test_each_page_is_a_shell_loading_its_module_under_a_strict_policy(client, path: str, module: str):
    html, policy = shell(client, path)

    html5lib.HTMLParser(strict=True).parse(html)
    [(nonce, _)] = INLINE_SCRIPT.findall(html)
    assert f"script-src 'self' 'nonce-{nonce}';" in policy
    assert "style-src 'self';" in policy
    assert "object-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert f'<script type="module" src="/static/webapp/{module}"></script>' in html
    assert '<script type="module" src="/static/webapp/shell.js"></script>' in html
    # Nothing is loaded from another address, and no style is inline.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert " style=" not in html
    assert "<style" not in html


def test_each_response_has_a_nonce_of_its_own(client):
    first, second = shell(client, "/")[1], shell(client, "/")[1]
    assert first != second


def test_the_route_reaches_the_page_as_json(client):
    html, _ = shell(client, "/books/6f1c2d3e-0000-4000-8000-000000000001/pages/3")
    assert (
        '<script id="route" type="application/json">'
        '{"project_id": "6f1c2d3e-0000-4000-8000-000000000001", "number": 3}</script>'
    ) in html


def test_any_other_address_is_the_apps_404_page_and_v1_stays_problem_json(client):
    html, _ = shell(client, "/no/such/page", status=404)
    assert "This page does not exist" in html
    shell(client, "/books/not-a-uuid", status=404)
    api = client.get("/v1/no-such-thing")
    assert api.status_code == 404
    assert api["Content-Type"] == "application/problem+json"


def test_pages_only_answer_reads(client):
    assert client.post("/").status_code == 405
    assert client.post("/settings/developer").status_code == 405


def test_external_providers_are_offered_only_when_configured_with_a_sign_in_address(client, settings):
    assert "data-provider" not in shell(client, "/signin")[0]
    settings.OIDC_PROVIDERS = {
        "google": {
            "client_ids": ["web-client.apps.example"],
            "authorize_url": "https://accounts.example/o/oauth2/v2/auth",
        },
        "apple": {"client_ids": ["org.example.app"], "authorize_url": ""},
        "okta": {"client_ids": [], "authorize_url": "https://okta.example/authorize"},
    }

    for path in ("/signin", "/signup"):
        html = shell(client, path)[0]
        assert html.count("data-provider=") == 1
        assert 'data-provider="google">Continue with Google</button>' in html
        assert '"authorizeUrl": "https://accounts.example/o/oauth2/v2/auth"' in html
        assert '"clientId": "web-client.apps.example"' in html


def test_instant_credit_is_offered_on_development_deployments_only(client, settings):
    settings.STRIPE_SECRET_KEY = ""
    settings.DEVELOPMENT_DEPLOYMENT = True
    assert 'value="manual"' in shell(client, "/wallet")[0]
    settings.DEVELOPMENT_DEPLOYMENT = False
    html = shell(client, "/wallet")[0]
    assert 'value="manual"' not in html
    assert 'id="top-up-form"' not in html
    settings.STRIPE_SECRET_KEY = "sk_test_configured"
    html = shell(client, "/wallet")[0]
    assert 'value="card"' in html
    assert 'value="manual"' not in html


def test_the_modules_put_data_into_pages_as_text_only():
    for module in MODULES.glob("*.js"):
        source = module.read_text()
        for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert forbidden not in source, f"{module.name} uses {forbidden}"


def test_the_modules_are_valid_javascript(tmp_path: Path):
    node = shutil.which("node")
    assert node, "node checks the modules' syntax: scripts/lib.sh system_tools_ensure installs Debian's nodejs"
    for module in MODULES.glob("*.js"):
        copy = tmp_path / f"{module.stem}.mjs"
        copy.write_text(module.read_text())
        checked = subprocess.run([node, "--check", str(copy)], capture_output=True, text=True, check=False)
        assert checked.returncode == 0, f"{module.name}: {checked.stderr}"
