"""The README from a brand-new clone: every command it shows runs and says what it claims.

The committed HEAD of this repository is cloned into a temporary folder and installed
into a fresh virtualenv with ``pip install --no-deps --no-build-isolation -e .``. The
dependencies (pip and the build backend among them) come from the environment running
the tests, reached through a ``.pth`` file that names its site-packages folders: never
from the base interpreter behind it, whose packages a user's venv does not control
(``--system-site-packages`` would reach those, e.g. an old setuptools and no wheel).
So the test is fast and needs no network, and the package comes from the clone
(checked: the venv imports layersearch from the clone). Then every ```bash
block of README.md runs in the clone, command by command, in order, with the venv first
on PATH; ``pip install`` and ``python -m pytest`` segments are the installation this
test did itself and the whole test suite, so they are not run again. Every ```python
block runs with the venv's python in the clone as well. Offline: HF_HUB_OFFLINE=1 and
the bundled embedding model.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

README = ROOT / "README.md"
SKIPPED = ("pip install ", "python -m pytest", "python -m venv ", ". .venv/")


def bash_commands(text: str) -> list[str]:
    """The commands of every ```bash block, comments dropped, ``&&`` chains split."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if not line or line.startswith("#"):
                continue
            for part in line.split(" && "):
                if not part.startswith(SKIPPED):
                    commands.append(part.strip())
    return commands


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_bash_commands_are_extracted() -> None:
    commands = bash_commands(README.read_text())
    assert commands[0] == "layersearch load models"
    assert not any(c.startswith(SKIPPED) for c in commands)
    assert any(c.startswith("layersearch vault index fixtures/vault") for c in commands)


def run(
    argv: list[str] | str, cwd: Path, env: dict[str, str], **kw: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        **kw,  # type: ignore[arg-type]
    )


def _reach_running_environment(venv: Path) -> None:
    """Put the running environment's site-packages on the new venv's path, after its own.

    A ``.pth`` line that is a folder adds it to ``sys.path`` without reading the ``.pth``
    files inside, so the running environment's editable layersearch stays out and the
    clone's install is the one imported.
    """
    probe = "import sysconfig; print(sysconfig.get_path('purelib')); print(sysconfig.get_path('platlib'))"
    ours = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    theirs = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(theirs).mkdir(parents=True, exist_ok=True)
    (Path(theirs) / "_running_environment.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to clone")
    base = tmp_path_factory.mktemp("readme")
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    dest = base / "layersearch"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True, timeout=300)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", head], check=True)
    venv = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300
    )
    _reach_running_environment(venv)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LAYERSEARCH_") and k not in {"PYTHONPATH", "COLUMNS"}
    }
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        HF_HUB_OFFLINE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INDEX="1",
    )
    # The running environment's pip, setuptools and wheel (the [dev] extra pins the build
    # backend for this) install the clone into the new venv.
    pip = ["python", "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", "."]
    install = run(pip, dest, env)
    assert install.returncode == 0, install.stderr
    where = run(["python", "-c", "import layersearch; print(layersearch.__file__)"], dest, env)
    assert where.stdout.strip() == str(dest / "src" / "layersearch" / "__init__.py"), where
    return dest, env


@pytest.mark.slow
def test_every_readme_command_runs_in_a_fresh_clone(clone: tuple[Path, dict[str, str]]) -> None:
    dest, env = clone
    outputs: dict[str, str] = {}
    for command in bash_commands((dest / "README.md").read_text()):
        proc = run(["bash", "-c", command], dest, env, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "error:" not in proc.stderr, (
            command,
            proc.stderr,
        )
        outputs[command] = proc.stdout
    # What the README says the commands show.
    first = next(out for cmd, out in outputs.items() if "--entity orders.net_revenue" in cmd)
    assert "memory:1" in first and "shop.orders.net_revenue" in first
    assert "loaded finance, marketing, shop: 300 entities" in outputs["layersearch load models"]
    saved = next(out for cmd, out in outputs.items() if cmd.startswith("layersearch memory add"))
    assert saved.startswith("saved memory:") and "shop.orders.net_revenue" in saved
    inspected = outputs["layersearch inspect shop.orders.net_revenue memory:1"]
    assert "Revenue means net revenue" in inspected
    vault = next(out for cmd, out in outputs.items() if cmd.startswith("layersearch vault search"))
    assert "Metrics/Churn rate" in vault
    spider = outputs["layersearch load examples/spider/tables.json"]
    assert spider.startswith("loaded flight_ops, library, school: 66 entities in 12 models")
    evaluated = next(out for cmd, out in outputs.items() if "eval schema-linking" in cmd)
    assert "table_recall@5" in evaluated
    for cmd, out in outputs.items():
        if "--json" in cmd:
            assert out.lstrip().startswith(("{", "[")), cmd


@pytest.mark.slow
def test_every_getting_started_command_runs_in_a_fresh_clone(
    clone: tuple[Path, dict[str, str]],
) -> None:
    """The guide's commands, in order, as a newcomer types them in a clone."""
    dest, env = clone
    commands = bash_commands((dest / "docs" / "getting-started.md").read_text())
    assert commands[0] == "layersearch load models"
    for command in commands:
        proc = run(["bash", "-c", command], dest, env, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (command, proc.stderr)


@pytest.mark.slow
def test_every_readme_python_block_runs_in_a_fresh_clone(
    clone: tuple[Path, dict[str, str]],
) -> None:
    dest, env = clone
    for code in python_blocks((dest / "README.md").read_text()):
        proc = run(["python", "-c", code], dest, env)
        assert proc.returncode == 0, proc.stderr
        assert "memory:1" in proc.stdout and "why: " in proc.stdout, proc.stdout


@pytest.mark.parametrize(
    "doc", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_relative_links_stay_inside_the_repository(doc: Path) -> None:
    """No link to ../shared/… or any other file a clone does not have."""
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path = (doc.parent / target).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), (doc.name, target)
