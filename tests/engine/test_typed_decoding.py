"""The command line's typed decoding (engine.scenario_typed) answers byte for byte as
the usual reading of the same file: on every golden scenario, on a generated cluster,
and on allocations it leaves to the usual reading (whose answer or error is kept)."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

import engine.__main__ as cli
from engine.bench import SIZES, generate
from engine.scenario_typed import decode_typed

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


def _stdout(
    raw: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str], typed: bool
) -> tuple[int, str]:
    path = tmp_path / "scenario.json"
    path.write_bytes(raw)
    enabled = gc.isenabled()
    with pytest.MonkeyPatch.context() as patch:
        if not typed:  # the usual way only
            patch.setattr(cli, "decode_typed", lambda _raw: None)
        try:
            code = cli.main([str(path)])
        finally:
            if enabled:
                gc.enable()
    return code, capsys.readouterr().out


def _same_both_ways(raw: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    typed = _stdout(raw, tmp_path, capsys, typed=True)
    usual = _stdout(raw, tmp_path, capsys, typed=False)
    assert typed == usual
    return typed[1]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_golden_scenarios_answer_the_same_bytes(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each golden scenario's answer is the same bytes, and the typed way read it."""
    raw = json.dumps(json.loads(path.read_text())["input"]).encode()
    _same_both_ways(raw, tmp_path, capsys)
    assert decode_typed(raw) is not None


def test_a_generated_cluster_answers_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """engine.bench's small cluster (2,000 allocations) with its preempt request."""
    raw = json.dumps(generate(SIZES["small"])).encode()
    out = _same_both_ways(raw, tmp_path, capsys)
    assert json.loads(out)["status"] in ("preempted", "fits", "not_possible")
    typed = decode_typed(raw)
    assert typed is not None
    assert typed[1] is not None
    assert len(typed[1]) == 2_000


BASE = json.loads((Path(__file__).parent / "scenarios" / "quota_seed_enforced.json").read_text())[
    "input"
]


@pytest.mark.parametrize(
    "change",
    [
        {"resources": {"memory": 0}},
        {"resources": {"memory": -1}},
        {"resources": {"memory": 20.0}},
        {"priority": 2**31},
        {"priority": 3.0},
        {"app": None},
        {"created": 100},
        {"created": 10**400},
        {"key": ""},
        {"node": "nowhere"},
        {"queue": "root.a"},
        {"originator": 1},
    ],
    ids=lambda c: json.dumps(c),
)
def test_allocations_left_to_the_usual_way_keep_their_answer(
    change: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An allocation the typed way cannot vouch for is read the usual way: the same
    answer, or the same error naming the field."""
    doc = json.loads(json.dumps(BASE))
    doc["allocations"][0].update(change)
    _same_both_ways(json.dumps(doc).encode(), tmp_path, capsys)


@pytest.mark.parametrize(
    "raw",
    [b"[1]", b"{", b'{"queues": {"name": "root"}, "allocations": null}', b"[" * 100_000],
    ids=["array", "truncated", "null allocations", "deep"],
)
def test_other_documents_keep_their_answer(
    raw: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad JSON, another top-level value, deep nesting: the same answer or error."""
    _same_both_ways(raw, tmp_path, capsys)
