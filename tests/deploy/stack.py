"""Reading the deployment files the way Docker does, for the tests that check them: the
compose file with its `${...}` variables interpolated (Compose's rules, nesting included),
the Dockerfiles' stages and instructions, `.dockerignore`, and the variables the settings
module and the README document."""

from __future__ import annotations

import ast
import json
import re
import secrets
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker" / "compose.yaml"
ENV_EXAMPLE = REPO_ROOT / "docker" / "env.example"
DEPLOY_DOC = REPO_ROOT / "docs" / "deploy.md"
ENGINES_DOC = REPO_ROOT / "docs" / "engines.md"
SETTINGS_FILE = REPO_ROOT / "config" / "settings.py"
README = REPO_ROOT / "README.md"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
# The service's own packages, what the images run: every package at the top of the
# repository but the tests and the benchmarks, which are not shipped.
FIRST_PARTY = sorted(
    path.parent.name for path in REPO_ROOT.glob("*/__init__.py") if path.parent.name not in {"tests", "bench"}
)

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class MissingVariable(Exception):
    """A `${NAME:?message}` whose variable is unset (Compose refuses to start)."""


# --- Compose interpolation ----------------------------------------------------------------


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """`text` with `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
    `${NAME:?error}`, `${NAME?error}`, `${NAME:+alt}`, `${NAME+alt}` expanded and `$$` turned
    into `$`, as Compose does; defaults may nest further `${...}`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "$":
            out.append(text[i])
            i += 1
            continue
        following = text[i + 1 : i + 2]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "{":
            end = _closing_brace(text, i + 1)
            out.append(_expand(text[i + 2 : end], variables))
            i = end + 1
        elif bare := re.match(_NAME, text[i + 1 :]):
            out.append(variables.get(bare.group(), ""))
            i += 1 + len(bare.group())
        else:
            out.append("$")
            i += 1
    return "".join(out)


def _closing_brace(text: str, opening: int) -> int:
    depth = 0
    for position in range(opening, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return position
    raise ValueError(f"unclosed ${{ in {text!r}")


def _expand(expression: str, variables: Mapping[str, str]) -> str:
    parsed = re.fullmatch(rf"({_NAME})(?:(:?[-?+])(.*))?", expression, re.DOTALL)
    if parsed is None:
        raise ValueError(f"invalid interpolation ${{{expression}}}")
    name, operator, argument = parsed.groups()
    value = variables.get(name)
    missing = value is None or (operator is not None and operator.startswith(":") and value == "")
    if operator is None:
        return value or ""
    if operator in (":-", "-"):
        return interpolate(argument, variables) if missing else str(value)
    if operator in (":?", "?"):
        if missing:
            raise MissingVariable(f"{name}: {argument}")
        return str(value)
    return "" if missing else interpolate(argument, variables)  # :+ and +


def compose_variable_names() -> set[str]:
    """Every variable the compose file reads from `.env` or the shell (in its values:
    Compose interpolates nothing else)."""
    names: set[str] = set()
    for text in _strings(yaml.safe_load(COMPOSE_FILE.read_text())):
        names.update(re.findall(rf"\$\{{({_NAME})", text.replace("$$", "")))
    return names


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)


def _interpolate_values(node: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, variables)
    if isinstance(node, list):
        return [_interpolate_values(item, variables) for item in node]
    if isinstance(node, dict):
        return {key: _interpolate_values(value, variables) for key, value in node.items()}
    return node


def compose_load(variables: Mapping[str, str]) -> dict[str, Any]:
    """The compose file as Compose sees it with these variables (anchors merged)."""
    loaded = yaml.safe_load(COMPOSE_FILE.read_text())
    return _interpolate_values(loaded, variables)


def dot_env() -> dict[str, str]:
    """docker/env.example with its blanks filled the way its comments ask: what an
    operator's docker/.env holds."""
    values = env_file_read(ENV_EXAMPLE)
    return {name: value or secrets.token_hex(32) for name, value in values.items()}


def env_file_read(path: Path) -> dict[str, str]:
    """NAME=value lines of an env file (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


# --- One compose service --------------------------------------------------------------------


@dataclass
class Service:
    name: str
    spec: dict[str, Any]

    @property
    def argv(self) -> list[str]:
        command = self.spec.get("command", [])
        return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]

    @property
    def environment(self) -> dict[str, str]:
        environment = self.spec.get("environment", {})
        if isinstance(environment, list):
            return dict(item.partition("=")[::2] for item in environment)
        return {name: "" if value is None else str(value) for name, value in environment.items()}

    @property
    def dockerfile(self) -> Path | None:
        build = self.spec.get("build")
        if build is None:
            return None
        context = COMPOSE_FILE.parent / build.get("context", ".")
        return (context / build.get("dockerfile", "Dockerfile")).resolve()

    @property
    def build_target(self) -> str | None:
        build = self.spec.get("build") or {}
        return build.get("target")

    @property
    def one_shot(self) -> bool:
        return self.spec.get("restart") == "no"

    @property
    def gpu_devices(self) -> list[dict[str, Any]]:
        reservations = self.spec.get("deploy", {}).get("resources", {}).get("reservations", {})
        return [device for device in reservations.get("devices", []) if "gpu" in device.get("capabilities", [])]

    def option(self, *names: str) -> str | None:
        """The value after the first of `names` in the command (`-Q x` or `--queues=x`)."""
        return argv_option(self.argv, *names)


def argv_option(argv: list[str], *names: str) -> str | None:
    for position, part in enumerate(argv):
        if part in names and position + 1 < len(argv):
            return argv[position + 1]
        for name in names:
            if name.startswith("--") and part.startswith(name + "="):
                return part.split("=", 1)[1]
    return None


def queues_of(argv: list[str]) -> set[str]:
    queues = argv_option(argv, "-Q", "--queues")
    assert queues, f"a worker without -Q consumes only the default queue: {argv}"
    return set(queues.split(","))


def node_of(argv: list[str]) -> str:
    """A worker command's node name as its health check names it: `-n gpu@%h` is
    `gpu@$HOSTNAME`."""
    return (argv_option(argv, "-n", "--hostname") or "celery@%h").replace("%h", "$HOSTNAME")


def services_of(compose: Mapping[str, Any]) -> dict[str, Service]:
    return {name: Service(name, spec) for name, spec in compose["services"].items()}


# --- Dockerfiles and .dockerignore ----------------------------------------------------------


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def arguments(self, instruction: str) -> list[str]:
        return [argument for keyword, argument in self.instructions if keyword == instruction]

    @property
    def cmd(self) -> list[str]:
        commands = self.arguments("CMD")
        return _exec_form(commands[-1]) if commands else []

    @property
    def env_names(self) -> set[str]:
        names = set()
        for argument in self.arguments("ENV"):
            names.update(re.findall(rf"(?:^|\s)({_NAME})=", argument))
        return names

    @property
    def apt_packages(self) -> set[str]:
        packages: set[str] = set()
        for run in self.arguments("RUN"):
            for install in re.findall(r"apt-get install ([^&;]*)", run):
                packages.update(word for word in install.split() if not word.startswith("-"))
        return packages


def _exec_form(argument: str) -> list[str]:
    argument = argument.strip()
    return json.loads(argument) if argument.startswith("[") else ["/bin/sh", "-c", argument]


def dockerfile_stages(path: Path) -> list[Stage]:
    """The Dockerfile's stages in order, each with its instructions (continuations joined,
    comments and parser directives dropped)."""
    text = re.sub(r"\\\n(?:\s*#[^\n]*\n)*", " ", path.read_text())
    stages: list[Stage] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, argument = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            parts = argument.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(base=parts[0], name=name))
        elif stages:
            stages[-1].instructions.append((keyword, argument.strip()))
    return stages


def stage_chain(stages: list[Stage], target: str | None) -> list[Stage]:
    """The stage a build of `target` ends in (the last one without a target) and the
    stages it is built FROM, base first."""
    by_name = {stage.name: stage for stage in stages if stage.name}
    stage = by_name[target] if target else stages[-1]
    chain = [stage]
    while stage.base in by_name:
        stage = by_name[stage.base]
        chain.insert(0, stage)
    return chain


def copy_sources(stage: Stage) -> Iterator[str]:
    """The build-context paths a stage's COPY and ADD instructions read."""
    for instruction in ("COPY", "ADD"):
        for argument in stage.arguments(instruction):
            words = shlex.split(argument)
            if any(word.startswith("--from=") for word in words):
                continue
            paths = [word for word in words if not word.startswith("--")]
            yield from paths[:-1]


@cache
def dockerignore_patterns() -> tuple[str, ...]:
    lines = DOCKERIGNORE.read_text().splitlines() if DOCKERIGNORE.exists() else []
    return tuple(line.strip().strip("/") for line in lines if line.strip() and not line.startswith("#"))


def dockerignored(relative: str) -> bool:
    """Whether `.dockerignore` leaves this path (or a folder above it) out of the build
    context (no `!` exceptions are used)."""
    parts = Path(relative).parts
    for depth in range(1, len(parts) + 1):
        candidate = "/".join(parts[:depth])
        for pattern in dockerignore_patterns():
            if _pattern_regex(pattern).fullmatch(candidate):
                return True
    return False


@cache
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    regex = ""
    for piece in re.split(r"(\*\*/|\*\*|\*|\?)", pattern):
        regex += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(piece, re.escape(piece))
    return re.compile(regex)


# --- What the settings module and the README document ----------------------------------------


@cache
def settings_env_reads() -> dict[str, ast.Call]:
    """Every variable config/settings.py reads (`env.str("NAME", ...)` and the like), with
    the call that reads it."""
    reads: dict[str, ast.Call] = {}
    for node in ast.walk(ast.parse(SETTINGS_FILE.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        owner = node.func.value
        reads_env = (isinstance(owner, ast.Name) and owner.id == "env") or (
            isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute) and owner.func.attr == "Env"
        )
        first = node.args[0]
        if reads_env and isinstance(first, ast.Constant) and isinstance(first.value, str):
            reads[first.value] = node
    return reads


def settings_default(name: str) -> object:
    """The literal default config/settings.py gives a variable."""
    call = settings_env_reads()[name]
    default = next(keyword.value for keyword in call.keywords if keyword.arg == "default")
    return ast.literal_eval(default)


@cache
def readme_variables() -> frozenset[str]:
    """The variable names in the first column of the README's configuration table."""
    names: set[str] = set()
    for line in README.read_text().splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell))
    return frozenset(names)


def documented_variables() -> set[str]:
    return set(settings_env_reads()) | set(readme_variables())


def doc_table_names(path: Path) -> set[str]:
    """Back-quoted upper-case names in the first column of a Markdown file's tables."""
    names: set[str] = set()
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return names


def documented_vllm_serve() -> list[str]:
    """The recommended `vllm serve` command of docs/engines.md, as argv."""
    text = ENGINES_DOC.read_text()
    found = re.search(r"^vllm serve .*?(?=^```)", text, re.MULTILINE | re.DOTALL)
    assert found, "docs/engines.md has no `vllm serve` command block"
    command = re.sub(r"\\\n", " ", found.group())
    return shlex.split(command, comments=True)
