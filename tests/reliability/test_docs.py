"""The documentation's entry points stay where CI and readers look for them: a short
README whose test command ``.ci/run`` can extract, links that resolve, and a page in
docs/benchmarks/ for every benchmark."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_is_at_most_8_kb() -> None:
    assert README.stat().st_size <= 8 * 1024


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed, as .ci/run does")
def test_ci_extracts_the_readme_test_command_with_its_own_sed_line() -> None:
    """The very sed command of .ci/run finds ``./scripts/test`` alone on its line."""
    ci = (ROOT / ".ci" / "run").read_text()
    line = next(x for x in ci.splitlines() if x.startswith("TEST_CMD=$(sed -n "))
    script = re.search(r"sed -n '([^']*)' README\.md", line)
    assert script is not None, line
    out = subprocess.run(
        ["sed", "-n", script.group(1), str(README)], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[:1] == ["./scripts/test"]
    assert "./scripts/run" in README.read_text().splitlines()


def test_readme_links_resolve() -> None:
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert missing == []


def test_every_benchmark_has_a_page() -> None:
    """One page per benchmark in docs/benchmarks/, naming its command."""
    pages = " ".join(p.read_text() for p in (ROOT / "docs" / "benchmarks").glob("*.md"))
    benchmarks = [f"benchmarks/{p.name}" for p in sorted((ROOT / "benchmarks").glob("*.py"))]
    benchmarks += ["python -m engine.bench", "loadtest/run.py", "loadtest/profile.py"]
    assert [b for b in benchmarks if b not in pages] == []
