"""Hypothesis profiles: ``ci`` runs every property with its full example count, ``dev``
(the default outside CI) runs a fifth of it, so that a local run is quicker.

The profile is ``HYPOTHESIS_PROFILE`` when set, else ``ci`` when ``CI=true``, else ``dev``.
Tests that choose their own count write ``max_examples=examples(200)``: 200 in CI.
"""

from __future__ import annotations

import os

from hypothesis import settings

#: Hypothesis's own default count, which tests without a count of their own use.
DEFAULT_EXAMPLES = 100
#: The share of each count the ``dev`` profile runs, and the least it runs.
DEV_SHARE = 0.2
DEV_MIN = 10

PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI") == "true" else "dev"
)


def examples(count: int) -> int:
    """The example count to run for a property whose full count is *count*.

    >>> examples(200) if PROFILE == "ci" else 200
    200
    """
    return count if PROFILE == "ci" else _dev_count(count)


def _dev_count(count: int) -> int:
    return max(DEV_MIN, int(count * DEV_SHARE))


def load() -> None:
    """Register both profiles and load the selected one."""
    settings.register_profile("ci", max_examples=DEFAULT_EXAMPLES)
    settings.register_profile("dev", max_examples=_dev_count(DEFAULT_EXAMPLES))
    if PROFILE not in ("ci", "dev"):
        raise ValueError(f"HYPOTHESIS_PROFILE={PROFILE!r}: the profiles are 'ci' and 'dev'")
    settings.load_profile(PROFILE)
