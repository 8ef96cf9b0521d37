"""The benchmark runs and prints its figures (speed itself is never asserted)."""

from __future__ import annotations

import pytest

from engine import bench, evaluate, parse_scenario


def test_generated_clusters_are_deterministic_and_packed() -> None:
    """Same seed, same document; nodes are full so the ask needs preemption."""
    doc = bench.generate(bench.SIZES["tiny"])
    assert doc == bench.generate(bench.SIZES["tiny"])
    scenario = parse_scenario(doc)
    assert len(scenario.cluster.allocations) == 200
    answer = evaluate(scenario).to_dict()
    assert answer["status"] == "preempted"
    assert answer["victims"]


def test_bench_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """One tiny size prints the preempt, quota, round, memory and CLI lines."""
    assert bench.main(["--sizes", "tiny", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for label in ("preempt, whole call", "quota_change", "round of 20 asks", "peak memory",
                  "json.load alone", "python -m engine wall"):  # fmt: skip
        assert label in out


def test_unknown_size_is_refused() -> None:
    """--sizes names known sizes only."""
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "huge"])
