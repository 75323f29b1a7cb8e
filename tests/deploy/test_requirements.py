"""The images install requirements/prod.txt (CPU nodes) and requirements/gpu.txt (GPU
node), not the development environment these tests run in: every third-party module the
service imports must come from a distribution those files pin or pull in, or the image
fails where the tests passed."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.stack import FIRST_PARTY, REPO_ROOT


def pinned_requirements(path: Path) -> Iterator[Requirement]:
    """The requirements of a requirements file, following its `-r` includes."""
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            yield from pinned_requirements(path.parent / line[3:].strip())
        elif line:
            yield Requirement(line)


def installed_closure(path: Path) -> set[str]:
    """Every distribution installing `path` brings in (extras and markers honoured), as
    read from the distributions installed here."""
    seen: set[str] = set()
    pending = [(requirement.name, set(requirement.extras)) for requirement in pinned_requirements(path)]
    while pending:
        name, extras = pending.pop()
        key = canonicalize_name(name) + "[" + ",".join(sorted(extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here, so it provides none of the imports found
        for text in requires:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras | {""}):
                pending.append((requirement.name, set(requirement.extras)))
    return {key.split("[")[0] for key in seen}


def third_party_imports() -> dict[str, Path]:
    """Top-level modules the service's code imports (tests, migrations and the standard
    library left out), with one file that imports each."""
    modules: dict[str, Path] = {}
    for package in FIRST_PARTY:
        for path in (REPO_ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                        modules.setdefault(top, path.relative_to(REPO_ROOT))
    return modules


def assert_imports_installed_by(requirements: Path) -> None:
    closure = installed_closure(requirements)
    providers = importlib.metadata.packages_distributions()
    missing = {
        module: str(where)
        for module, where in third_party_imports().items()
        if not {canonicalize_name(dist) for dist in providers.get(module, [])} & closure
    }
    assert missing == {}, f"imported but not installed by {requirements.name}: {missing}"


def test_the_cpu_images_requirements_provide_every_module_the_service_imports():
    assert_imports_installed_by(REPO_ROOT / "requirements" / "prod.txt")


def test_the_gpu_image_installs_the_cpu_requirements_and_vllm():
    def names(file: str) -> set[str]:
        return {canonicalize_name(requirement.name) for requirement in pinned_requirements(REPO_ROOT / file)}

    gpu = names("requirements/gpu.txt")
    assert names("requirements/prod.txt") <= gpu
    assert "vllm" in gpu
    assert re.search(r"^vllm==", (REPO_ROOT / "requirements/gpu.txt").read_text(), re.MULTILINE)
