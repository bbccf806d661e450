"""Dedup scope keys: which memories an exact or near duplicate may be merged into.

`scope_key` is `<type>/<visibility>/<owner>/<session>`: shared memories dedup across agents
(owner `*`), private ones per agent, `working` ones per session (`-`: no session; other types `*`).
The owner and session are escaped (a backslash and `/` get a backslash, a session that is
literally `-` too), so every key names exactly one (type, visibility, owner, session): agent `x`
in session `y/z` and agent `x/y` in session `z` no longer share a key (issue 24). A key without
those characters is exactly what `legacy_scope_key` gave, so only memories whose agent or session
holds `/` or a backslash, or is `-`, changed key: the SQLite store and index migrate them; other
stores are re-keyed on read (the writer also looks a duplicate up under the legacy key, re-checks
every candidate's own scope and visibility, and a merge stores the new key: `Writer._find_duplicate`).
"""

from __future__ import annotations

from rearview.models import MemoryType, Visibility

__all__ = ["legacy_scope_key", "scope_key"]


def scope_key(memory_type: MemoryType, visibility: Visibility, agent_id: str, session_id: str | None) -> str:
    """The dedup scope, unambiguous: distinct (type, visibility, owner, session) give distinct keys."""
    owner = _escaped(agent_id) if visibility is Visibility.PRIVATE else "*"
    if memory_type is not MemoryType.WORKING:
        session = "*"
    elif session_id is None:
        session = "-"
    else:
        session = "\\-" if session_id == "-" else _escaped(session_id)
    return f"{memory_type.value}/{visibility.value}/{owner}/{session}"


def legacy_scope_key(
    memory_type: MemoryType, visibility: Visibility, agent_id: str, session_id: str | None
) -> str:
    """The key written before issue 24 (nothing escaped): only for finding memories stored under it."""
    owner = agent_id if visibility is Visibility.PRIVATE else "*"
    session = session_id or "-" if memory_type is MemoryType.WORKING else "*"
    return f"{memory_type.value}/{visibility.value}/{owner}/{session}"


def _escaped(part: str) -> str:
    return part.replace("\\", "\\\\").replace("/", "\\/")
