"""The context block `memory_search` returns for direct injection into a prompt."""

from __future__ import annotations

from collections.abc import Sequence

from rearview.clock import to_iso
from rearview.models import SearchHit

CONFLICT_RULE = "If a memory conflicts with the current situation, the current situation wins."


def render_context(hits: Sequence[SearchHit]) -> str:
    """One line per memory labelled with type, confidence and date, ending with the conflict rule.

    An empty result renders as an explicit "no relevant memories" block, so a caller can inject
    the block unconditionally.
    """
    if not hits:
        return "<memories>\n(no relevant memories)\n</memories>"
    lines = ["<memories>"]
    for hit in hits:
        date = to_iso(hit.event_time)[:10]
        lines.append(f"- [{hit.type.value} | confidence {hit.confidence:.2f} | {date}] {hit.content}")
    lines.append(CONFLICT_RULE)
    lines.append("</memories>")
    return "\n".join(lines)
