"""Where the command line finds the service and the credential:
a flag, else the environment (`BOOKTRANSLATE_URL`, `BOOKTRANSLATE_API_KEY`), else the config
file, else the local default address.

The config file is `$XDG_CONFIG_HOME/booktranslate/config.toml` (by default
`~/.config/booktranslate/config.toml`), or the one `BOOKTRANSLATE_CONFIG` names:

    url = "https://books.example.com"
    api_key = "svc_sk_live_..."
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Settings:
    """The service's address and the credential (an API key or a JWT) to send it."""

    url: str
    api_key: str | None


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The config file's path (whether or not it exists)."""
    if environ.get("BOOKTRANSLATE_CONFIG"):
        return Path(environ["BOOKTRANSLATE_CONFIG"])
    base = Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "booktranslate" / "config.toml"


def settings_load(
    *, url: str | None = None, api_key: str | None = None, environ: Mapping[str, str] = os.environ
) -> Settings:
    """The settings from the flags given, the environment and the config file, in that order.
    A config file that is not valid TOML raises ValueError naming it."""
    path = config_path(environ)
    stored: dict[str, object] = {}
    if path.is_file():
        try:
            stored = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{path}: {error}") from error
    return Settings(
        url=str(url or environ.get("BOOKTRANSLATE_URL") or stored.get("url") or DEFAULT_URL).rstrip("/"),
        api_key=api_key or environ.get("BOOKTRANSLATE_API_KEY") or _text(stored.get("api_key")),
    )


def _text(value: object) -> str | None:
    return str(value) if value else None
