"""Runs the test session on a reserved stretch of CPython's frame stack.

CPython 3.11 keeps Python frames on a per-thread data stack made of 16 KiB chunks, each
``mmap``-ed when a call needs room past the last one and ``munmap``-ed as soon as that
call returns, with no chunk kept for the next call (CPython issue gh-142183, fixed in
3.13 and 3.14 by keeping one; 3.11 gets no such fix).  A test that goes back and forth
over a chunk's end at one call depth pays a ``mmap``, the page faults of a fresh chunk
and a ``munmap`` every time: the API fuzz made about 190 such pairs a request (``strace
-c``: 176,551 ``munmap`` calls for two tests of 400 requests each), most of its 10 s of
system time.

:func:`run_on_reserved_stack` calls a function from inside a frame of
:data:`RESERVED_SLOTS` local variables that are never set: CPython gives a frame that
large a chunk of twice its size, so every frame the call makes below it fits in the
second half of that chunk, and no chunk is allocated or freed while the call runs,
however deep it goes back and forth (up to 512 KiB of frames: some thousands of calls
deep).  The locals cost nothing but their NULL slots (one 1 MiB chunk for the session).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Pointer-sized slots of the reserving frame: 512 KiB on 64-bit builds.
RESERVED_SLOTS = 65536


@functools.cache
def _reserving_caller() -> Callable[..., Any]:
    """A function with :data:`RESERVED_SLOTS` locals (named in dead code, so a local
    each) that calls its first argument with the rest."""
    names = " = ".join(f"_slot{i}" for i in range(RESERVED_SLOTS))
    source = (
        "def call(function, *args, **kwargs):\n"
        "    if False:\n"
        f"        {names} = None\n"
        "    return function(*args, **kwargs)\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, "<reserved frame stack>", "exec"), namespace)
    caller: Callable[..., Any] = namespace["call"]
    return caller


def run_on_reserved_stack(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)``, its frames on a reserved stretch of the stack."""
    result: T = _reserving_caller()(function, *args, **kwargs)
    return result
