"""Golden scenarios: every tests/engine/scenarios/*.json through the real command line.

Each file holds ``{"input": scenario, "expected": answer subset, "why": derivation}``.
Only the keys present in ``expected`` are compared; ``victims`` lists are
compared as sets (the contract: acceptance suites compare them as a set), also
inside round ``results`` and quota ``leaves``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent / "scenarios"
REPO = Path(__file__).resolve().parents[2]
FILES = sorted(SCENARIOS.glob("*.json"))


def _normalise(expected: object, actual: object) -> tuple[object, object]:
    """Project *actual* onto the keys of *expected*; victim lists become sorted sets."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        exp_out: dict[str, object] = {}
        act_out: dict[str, object] = {}
        for key, value in expected.items():
            got = actual.get(key, "<missing>")
            if key == "victims" and isinstance(value, list) and isinstance(got, list):
                exp_out[key] = sorted(set(value))
                act_out[key] = sorted(set(got))
                assert len(got) == len(set(got)), f"duplicate victims in {got}"
            else:
                exp_out[key], act_out[key] = _normalise(value, got)
        return exp_out, act_out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        pairs = [_normalise(e, a) for e, a in zip(expected, actual, strict=True)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return expected, actual


def run_engine(document: object) -> tuple[int, object]:
    """Run ``python -m engine -`` with *document* on stdin; exit status and decoded stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "-"],
        input=json.dumps(document).encode(),
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.stderr == b"", proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def test_there_are_enough_golden_scenarios() -> None:
    """The engine core alone ships at least 22 golden scenarios."""
    own = [f for f in FILES if not f.name.startswith("quota_")]
    assert len(own) >= 22


@pytest.mark.subprocess
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden_scenario(path: Path) -> None:
    """The command-line answer matches the hand-derived expected answer."""
    doc = json.loads(path.read_text())
    assert doc.get("why"), "every golden scenario explains its expected answer"
    code, answer = run_engine(doc["input"])
    assert code == 0, answer
    expected, actual = _normalise(doc["expected"], answer)
    assert expected == actual
