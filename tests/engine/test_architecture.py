"""engine/ stays framework-free: no Django, DRF, Celery, Redis, Plotly, kombu or dashboard."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN = {"django", "rest_framework", "celery", "redis", "plotly", "kombu", "dashboard"}


def imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            roots.add(node.args[0].value.split(".")[0])
    return roots


FILES = sorted(ENGINE.glob("*.py"))


def test_engine_has_modules() -> None:
    """The check below really sees the engine package."""
    expected = {"__init__.py", "answers.py", "preempt.py", "queues.py", "rounds.py"}
    assert expected <= {f.name for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_no_framework_imports(path: Path) -> None:
    """No engine module imports a web, task-queue or charting framework, or the dashboard."""
    roots = imported_roots(ast.parse(path.read_text(), filename=str(path)))
    assert roots & FORBIDDEN == set()


def test_detector_catches_forbidden_imports() -> None:
    """The detector itself flags each kind of import statement."""
    src = "import django.db\nfrom celery import shared_task\nimportlib.import_module('redis')\n"
    assert imported_roots(ast.parse(src)) >= {"django", "celery", "redis"}
