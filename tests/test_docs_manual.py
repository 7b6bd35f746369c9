"""The user's manual stays true to the code: the CLI reference is ``--help``, the
configuration page names every setting and variable, the README links every page."""

from __future__ import annotations

import importlib.util
import re

from layersearch.config import _KNOWN_KEYS, ENV_VARS
from tests.support import ROOT

DOCS = ROOT / "docs"


def _cli_reference() -> str:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", ROOT / "scripts" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.render()
    return text


def test_the_cli_reference_is_the_help_of_every_command() -> None:
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert page == _cli_reference(), "docs/cli.md is stale: run python scripts/cli_reference.py"


def test_the_cli_reference_covers_every_command() -> None:
    from layersearch.cli import main

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    for name in main.commands:
        assert f"## `layersearch {name}`" in page, name


def test_the_configuration_page_names_every_key_and_variable() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for key in _KNOWN_KEYS:
        assert f"`{key}`" in page, key
    for var in ENV_VARS.values():
        assert f"`{var}`" in page, var
    used = set()
    for path in (ROOT / "src" / "layersearch").rglob("*.py"):
        used |= set(re.findall(r"\bLAYERSEARCH_[A-Z_]+[A-Z]\b", path.read_text(encoding="utf-8")))
    missing = sorted(v for v in used if f"`{v}`" not in page and f"`_{v}`" not in page)
    assert not missing, (
        f"variables the code reads that docs/configuration.md does not name: {missing}"
    )


def test_the_readme_links_the_manual() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("getting-started", "cli", "configuration", "mcp", "postgres"):
        assert f"(docs/{page}.md)" in readme, page


def test_no_page_of_the_manual_opens_with_internal_imports() -> None:
    """A page's first code block is what a user runs: the CLI or the public API."""
    for page in sorted(DOCS.glob("*.md")):
        if page.name in ("architecture.md", "decisions.md"):
            continue  # pages for contributors
        first = re.search(r"```(\w+)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        if first is None or first.group(1) != "python":
            continue
        internal = re.findall(r"from layersearch\.[\w.]+ import", first.group(2))
        assert not internal, (page.name, internal)
