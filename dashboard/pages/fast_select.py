"""A select of a long flat list (every queue of a 1,000-queue tree) written in Python.

Django renders each option of a ``Select`` through two template includes: with two
lists of every queue of a big tree, that was a large share of every render of the
what-if page.  :class:`FastSelect` writes the same HTML, byte for byte,
without the template engine; it takes flat choices only (no option groups).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe


class FastSelect(forms.Select):
    """``forms.Select`` for flat choices, rendered without a template per option."""

    def render(
        self,
        name: str,
        value: Any,
        attrs: dict[str, Any] | None = None,
        renderer: Any = None,
    ) -> SafeString:
        values = set(self.format_value(value))
        final = self.build_attrs(self.attrs, attrs)
        parts = [f'<select name="{conditional_escape(name)}"{_attrs(final)}>']
        chosen = False
        for option_value, label in self.choices:
            if isinstance(label, list | tuple):
                raise TypeError("FastSelect takes flat choices (no option groups)")
            text = "" if option_value is None else str(option_value)
            selected = not chosen and text in values
            chosen = chosen or selected
            parts.append(
                f'\n  <option value="{conditional_escape(text)}"{" selected" if selected else ""}>'
                f"{conditional_escape(str(label))}</option>\n"
            )
        parts.append("\n</select>")
        return mark_safe("".join(parts))  # every piece is escaped above


def _attrs(attrs: dict[str, Any]) -> str:
    """Attributes as Django's ``attrs.html`` writes them (in order; True bare; False left out)."""
    out = []
    for name, value in attrs.items():
        if value is False:
            continue
        if value is True:
            out.append(f" {name}")
        else:
            out.append(f' {name}="{conditional_escape(str(value))}"')
    return "".join(out)
