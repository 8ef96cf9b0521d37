"""The command line: one JSON answer, exit 0; bad input exits 2 with one {"error": ...}."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOOD: dict[str, object] = {
    "now": 1000,
    "queues": {"name": "root", "children": [{"name": "a", "guaranteed": {"vcore": 5}}]},
    "nodes": [{"id": "n1", "capacity": {"vcore": 10}}],
    "allocations": [{"key": "x", "queue": "root.a", "node": "n1", "resources": {"vcore": 6}}],
    "request": {"type": "resources", "queue": "root.a"},
}


def run(args: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "engine", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.mark.subprocess
def test_file_and_stdin_give_the_same_answer(tmp_path: Path) -> None:
    """`python -m engine FILE` and `-` (stdin) print one JSON answer and exit 0."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(GOOD))
    code, out, err = run([str(path)])
    assert (code, err) == (0, "")
    assert json.loads(out) == {"preemptable": {"vcore": 1}, "remaining_guaranteed": {"vcore": -1}}
    assert run(["-"], json.dumps(GOOD).encode()) == (code, out, err)


def with_change(**top: object) -> bytes:
    doc = json.loads(json.dumps(GOOD))
    doc.update(top)
    return json.dumps(doc).encode()


def deep_queue(depth: int) -> bytes:
    """A scenario whose queue chain is *depth* levels deep (built as text: json.dumps recurses)."""
    head = "".join(f'{{"name": "q{i}", "children": [' for i in range(depth))
    tail = "]}" * depth
    tree = f'{{"name": "root", "children": [{head}{{"name": "leaf"}}{tail}]}}'
    request = '{"type": "resources", "queue": "root.x"}'
    return f'{{"queues": {tree}, "request": {request}}}'.encode()


HUGE = b'{"queues": {"name": "root", "children": [{"name": "a"}]}, "nodes": [{"id": "n1", ' + (
    b'"capacity": {"vcore": 1' + b"0" * 5000 + b"}}]}"
)

CASES: list[tuple[str, list[str], bytes, str]] = [
    ("unreadable file", ["/nonexistent/scenario.json"], b"", "cannot read"),
    ("no argument", [], b"", "usage"),
    ("bad json", ["-"], b'{"queues": ', "invalid JSON"),
    ("not utf-8", ["-"], b'{"queues": "\xff\xfe"}', "invalid JSON"),
    ("deep nesting", ["-"], b"[" * 200000 + b"]" * 200000, "nested too deeply"),
    ("huge number", ["-"], HUGE, "nodes[0].capacity.vcore"),
    ("huge float", ["-"], with_change(now=1e400), "now"),
    ("negative quantity", ["-"], with_change(nodes=[{"id": "n1", "capacity": {"vcore": -1}}]),
     "nodes[0].capacity.vcore"),
    ("unknown queue", ["-"], with_change(request={"type": "resources", "queue": "root.zz"}),
     "request.queue"),
    ("allocation on unknown node", ["-"], with_change(allocations=[
        {"key": "x", "queue": "root.a", "node": "nX", "resources": {}}]), "allocations[0].node"),
    ("duplicate key", ["-"], with_change(allocations=[
        {"key": "x", "queue": "root.a", "node": "n1", "resources": {}},
        {"key": "x", "queue": "root.a", "node": "n1", "resources": {}}]), "allocations[1].key"),
    ("missing request", ["-"], json.dumps({"queues": GOOD["queues"]}).encode(), "request"),
    ("top-level list", ["-"], b"[]", "scenario"),
    ("deep queue tree", ["-"], deep_queue(400), "request.queue"),
    ("too deep queue tree", ["-"], deep_queue(5000), "nested too deeply"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "stdin", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.subprocess
def test_bad_input_exits_2_with_one_error(args: list[str], stdin: bytes, needle: str) -> None:
    """Exit 2, exactly one JSON object with only "error", naming the problem, no traceback."""
    code, out, err = run(args, stdin)
    assert code == 2
    assert err == ""
    assert out.count("\n") == 1
    answer = json.loads(out)
    assert list(answer) == ["error"]
    assert needle in answer["error"]
