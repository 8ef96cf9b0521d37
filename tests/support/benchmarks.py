"""The benchmarks' own cluster generators, loaded for tests that poll what they generate.

``benchmarks/`` is not a package (its scripts run as files), so a test that needs one of
its generators loads the file by path, once per process.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@cache
def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (e.g. ``import_rest``, the REST answers)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
