"""The tree page's list of queues as one HTML string.

A 1,000-queue tree lists 1,000 links; the template engine spends more on that
loop than the rest of the page, so the list is built here, every value escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def queue_list_html(items: Iterable[Mapping[str, object]], selected: str) -> SafeString:
    """``<li>`` links of the queue list: state mark, name, status and dynamic pills.

    Each item has href, path, name, depth, state, label, mark, status and dynamic
    (as built by the tree view); all text is escaped.
    """
    out: list[str] = []
    for q in items:
        path = escape(q["path"])
        current = q["path"] == selected
        status = q["status"]
        aria = ' aria-current="true"' if current else ""
        out.append(
            f'<li style="--depth: {int(str(q["depth"]))}"><a href="{escape(q["href"])}" '
            f'data-queue="{path}" class="queue-link{" current" if current else ""}"'
            f'{aria} title="{path}">'
            f'<span class="state-mark state-{escape(q["state"])}" aria-hidden="true">'
            f"{escape(q['mark'] or '●')}</span>"
            f'<span class="queue-name mono">{escape(q["name"])}</span>'
            + (
                ' <span class="pill warning small" data-testid="queue-status">'
                f"{escape(status)}</span>"
                if status != "Active"
                else ""
            )
            + (
                ' <span class="pill small" data-testid="queue-dynamic" '
                'title="made from a child template">dynamic</span>'
                if q["dynamic"]
                else ""
            )
            + f'<span class="visually-hidden">, {escape(q["label"])}</span></a></li>'
        )
    return mark_safe("".join(out))  # every value above is escaped
