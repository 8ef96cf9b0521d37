"""Renders the source-state card as a page does."""

from __future__ import annotations

from django.template import Context, Template


def render_states() -> str:
    return Template("{% load sources %}{% source_states %}").render(Context({}))
