"""The status page at `/`, the hub's example client: one self-contained HTML page."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import html5lib
import pytest
from django.test import Client

SCRIPT = re.compile(r"<script nonce=\"([^\"]+)\">(.*?)</script>", re.DOTALL)


def assert_html_page(client: Client) -> tuple[str, str]:
    """GET / answers 200 HTML; its text and its Content-Security-Policy."""
    response = client.get("/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    return response.content.decode(), response["Content-Security-Policy"]


def test_the_status_page_is_one_html_page_with_its_script_and_nothing_from_elsewhere(client):
    html, policy = assert_html_page(client)

    html5lib.HTMLParser(strict=True).parse(html)  # well formed
    [(nonce, script)] = SCRIPT.findall(html)
    assert "/v1/hub?access_token=" in script
    assert "/v1/auth/login" in script
    # Nothing is loaded from another address: no src or href to a URL, no imports.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert not re.search(r"<(link|iframe|img|object|embed)\b", html)
    assert "@import" not in html
    assert "url(" not in html
    # Data reaches the page as text only.
    assert "innerHTML" not in script
    assert "insertAdjacentHTML" not in script
    assert "document.write" not in script
    # Only the page's own script and style may run.
    assert f"script-src 'nonce-{nonce}'" in policy
    assert "object-src 'none'" in policy


def test_each_response_has_a_nonce_of_its_own(client):
    first, second = assert_html_page(client)[1], assert_html_page(client)[1]
    assert first != second


def test_the_top_up_form_shows_on_development_deployments_only(client, settings):
    settings.DEVELOPMENT_DEPLOYMENT = True
    assert 'id="top-up"' in assert_html_page(client)[0]
    settings.DEVELOPMENT_DEPLOYMENT = False
    assert 'id="top-up"' not in assert_html_page(client)[0]


def test_the_status_page_only_answers_reads(client):
    assert client.post("/").status_code == 405


@pytest.mark.skipif(shutil.which("node") is None, reason="node checks the script's syntax")
def test_the_pages_script_is_valid_javascript(client, tmp_path: Path):
    [(_, script)] = SCRIPT.findall(assert_html_page(client)[0])
    source = tmp_path / "status_page.js"
    source.write_text(script)
    checked = subprocess.run(["node", "--check", str(source)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
