"""The snapshot importer's JSON decoding: the fast decoder answers exactly as the careful one.

msgspec keeps the last of repeated keys; its answer is taken only when encoding it back
gives the very text, or a key count proves no key was repeated, so a repeated key is
refused with the same message whichever decoder read the text, even where string values
try to mask it.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from dashboard.importers import ImportFailure, safejson
from dashboard.importers.safejson import (
    _UNVOUCHED,
    _bounded_decode,
    _fast_load,
    _writes_back,
    load_json,
)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(200), deadline=None)
@given(JSON_VALUES, st.booleans())
def test_fast_decode_equals_standard_decode(value: Any, compact: bool) -> None:
    """Whatever the fast path vouches for equals the standard library's decoding."""
    text = (json.dumps(value, separators=(",", ":")) if compact else json.dumps(value)).encode()
    fast = _fast_load(text)
    if fast is not _UNVOUCHED:
        assert json.loads(text) == fast
    assert json.loads(text) == load_json("f.json", text)


def test_fast_path_takes_a_compact_answer() -> None:
    """A plain compact answer (the scheduler's own form) is decoded by msgspec."""
    text = b'[{"nodeID":"n1","capacity":{"memory":1,"vcore":2},"tags":{"a":"x\\":y"}}]'
    assert _fast_load(text) == [
        {"nodeID": "n1", "capacity": {"memory": 1, "vcore": 2}, "tags": {"a": 'x":y'}}
    ]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (b'{"a":1,"a":2}', "a"),
        (b'[{"nodeID":"n","capacity":{"memory":1,"memory":2}}]', "memory"),
        # a string value that looks like one more key, beside a repeated one
        (b'{"a":1,"a":2,"c":":"}', "a"),
        (b'{"a":1,"a":2,"c":"\\":"}', "a"),
        (b'{"a":1,"a" :2}', "a"),
        (b'{"a\\\\":1,"b":1,"b":2}', "b"),
        (b'{"a":1,"\\u0061":2}', "a"),
    ],
)
def test_repeated_keys_are_refused_whichever_decoder(text: bytes, key: str) -> None:
    """Repeated keys never pass the fast path; the refusal names the key."""
    assert _UNVOUCHED is _fast_load(text)
    with pytest.raises(ImportFailure) as caught:
        load_json("f.json", text)
    assert f"f.json: invalid JSON: duplicate key {key!r}" == str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"[NaN]", "invalid JSON: NaN is not valid JSON"),
        # a number past the largest float: msgspec refuses it, json would read inf
        (b'{"created":1e400}', "invalid JSON: the number 1e400 is out of range"),
        (b"[-1.5E999]", "invalid JSON: the number -1.5E999 is out of range"),
        (b"[" * 101 + b"]" * 101, "JSON nested deeper than 100 levels"),
        (b'{"a":"\xff"}', "not UTF-8 text (byte 0xff at offset 6)"),
        (b'{"a":1', "invalid JSON: Expecting ',' delimiter"),
    ],
)
def test_bad_json_is_refused_by_the_careful_decoder(text: bytes, message: str) -> None:
    """Anything msgspec refuses or cannot vouch for gets the careful decoder's message."""
    assert _UNVOUCHED is _fast_load(text)
    with pytest.raises(ImportFailure) as caught:
        load_json("f.json", text)
    assert message in str(caught.value)


def test_byte_order_mark_is_accepted() -> None:
    """A UTF-8 byte order mark is skipped, as before."""
    assert load_json("f.json", b'\xef\xbb\xbf{"a":1}') == {"a": 1}


@pytest.mark.parametrize(
    "text",
    [
        b'["a\nb"]',
        b'["\\x"]',
        b'["\\u12"]',
        b"[1,]",
        b'{"a":1,}',
        b"[01]",
        b"[+1]",
        b"[.5]",
        b"[Infinity]",
        b"[-Infinity]",
        b"[1]\x00",
        b"[true false]",
        b"  [1]  ",
        b'["\\ud800\\udc00"]',
        b'{"\\u0000":1}',
        b"[1e5, -0, -0.0, 1E+2, 1.7976931348623157e308, 5e-324]",
        b"[1e999]",
        b"[123456789012345678901234567890]",
    ],
)
def test_fast_path_never_accepts_what_the_standard_library_refuses(text: bytes) -> None:
    """Edge cases of the JSON grammar: whatever the fast path vouches for, the standard
    library decodes to the same value; what it refuses, the fast path does not take."""
    fast = _fast_load(text)
    try:
        expected = json.loads(text)
    except ValueError:
        assert fast is _UNVOUCHED
    else:
        if fast is not _UNVOUCHED:
            assert json.dumps(fast) == json.dumps(expected)


def test_compact_answer_is_vouched_for_without_counting_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scheduler's compact answer is proven free of repeated keys by encoding it
    back (no key count, no walk of the document)."""

    def no_count(doc: Any) -> int:
        raise AssertionError("keys counted")

    monkeypatch.setattr(safejson, "_count_keys", no_count)
    text = b'[{"nodeID":"n1","capacity":{"memory":1},"allocations":[{"k":"a"}]},{"nodeID":"n2"}]'
    assert _fast_load(text) == json.loads(text)
    wrapper = b'{"timestamp":1,"partitions":[{"name":"default","queues":[]}],"x":{"a":[1,2]}}'
    assert _fast_load(wrapper) == json.loads(wrapper)


@pytest.mark.parametrize(
    "text",
    [
        b'{"a":1,"a":2}',
        b'[{"n":1},{"n":1,"n":2}]',
        b'{"p":[{"q":{"m":1,"m":1}}]}',
        b'{"a":1, "b":2}',  # not msgspec's own text: counted instead
        b'["<\\u003c>"]',  # escaped as Go escapes, not as msgspec does
    ],
)
def test_text_that_does_not_encode_back_is_not_vouched_for_by_it(text: bytes) -> None:
    """A repeated key (or any byte msgspec would write otherwise) fails the comparison."""
    assert not _writes_back(json.loads(text), text)


@pytest.mark.subprocess
def test_depth_bound_proven_by_the_decoder_in_one_thread() -> None:
    """With one thread the decoder itself refuses a text nested past the bound.

    Run in a fresh interpreter (as the one-shot command runs): the test process has
    other threads by the time the whole suite gets here."""
    program = textwrap.dedent(
        """
        import threading
        from dashboard.importers.safejson import _bounded_decode
        assert threading.active_count() == 1
        assert _bounded_decode(b"[[1]]") == ([[1]], True)
        try:
            _bounded_decode(b'[{"a":' * 51 + b"1" + b"}]" * 51)
        except RecursionError:
            print("refused")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refused"]


def test_depth_bound_walked_with_more_threads() -> None:
    """Another thread running: the recursion limit is left alone and the document walked,
    so a text nested one level too deep is still refused and one at the bound taken."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert _bounded_decode(b"[[1]]") == ([[1]], False)
        deep = b"[" * 101 + b"]" * 101
        assert _UNVOUCHED is _fast_load(deep)
        with pytest.raises(ImportFailure, match="JSON nested deeper than 100 levels"):
            load_json("f.json", deep)
        assert load_json("f.json", b"[" * 100 + b"]" * 100) is not None
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("depth", [99, 100])
def test_text_at_the_depth_bound_is_taken(depth: int) -> None:
    """Nested as deep as allowed: decoded (by whichever path), not refused."""
    text = b"[" * depth + b"]" * depth
    doc = load_json("f.json", text)
    for _ in range(depth - 1):
        doc = doc[0]
    assert doc == []


def test_decoding_keeps_no_reference_to_the_text() -> None:
    """With the cyclic collector paused (as the import runs), nothing the fast path made
    still holds the answer's text once it returns: a big answer is freed at once."""
    text = b'[{"nodeID":"n1","allocations":[{"k":"a"}]},{"nodeID":"n2"}]'
    before = sys.getrefcount(text)
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert _fast_load(text) == json.loads(text)
        assert sys.getrefcount(text) == before
    finally:
        if enabled:
            gc.enable()
