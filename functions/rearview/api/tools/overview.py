"""What a tenant holds, at a glance: the `memory_stats` tool, the profile and the listing resources.

Nothing here ranks or reinforces what it reads: recalling is `memory_search`'s job (`recall`).
"""

# No `from __future__ import annotations`: the SDK reads these signatures at registration time.
from functools import partial

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from rearview.api.outputs import structured
from rearview.api.tools.base import ToolsBase, agent_of, tenant_of
from rearview.errors import InvalidInputError
from rearview.models import MemoryFilter
from rearview.service.browsing import DEFAULT_LISTING_PAGE, MAX_BROWSE_PAGE
from rearview.service.search.rendering import render_profile


class OverviewTools(ToolsBase):
    """The tenant's counts, an agent's profile, and pages of what an agent may see."""

    async def memory_stats(self, ctx: Context) -> CallToolResult:
        """Counts of your tenant's memories (every agent's) by type and status, and the embedding model in
        use."""
        return structured(await self._call(ctx, partial(self.service.stats, tenant_of(ctx))))

    async def profile(self, agent_id: str, ctx: Context) -> str:
        """The `memory://profile/{agent_id}` resource: the agent's profile as a markdown list.

        A credential bound to an agent reads that agent's profile only.
        """
        memories = await self._call(
            ctx, partial(self.service.profile, tenant_of(ctx), agent_of(ctx, agent_id))
        )
        return render_profile(memories, agent_of(ctx, agent_id))

    async def memories(
        self,
        ctx: Context,
        tag: str | None = None,
        type: str | None = None,
        session_id: str | None = None,
        cursor: str | None = None,
        limit: str | None = None,
        agent_id: str | None = None,
    ) -> str:
        """The `memory://memories{?...}` resource: one page of what the agent may see, as JSON.

        `{"items": [memory, ...], "cursor": ..., "agent_id": ...}`, newest `updated_at` first, active
        memories with `tag`, of `type`, in `session_id` (each optional); `limit` 1..100 (default 25);
        pass `cursor` back for the next page (null: done). A listing, not a recall: nothing is ranked
        or reinforced. A credential bound to an agent lists what that agent may see; `agent_id` names
        the agent whose view the page is.
        """
        flt = MemoryFilter.model_validate(
            {"tags": (tag,) if tag else None, "types": (type,) if type else None, "session_id": session_id}
        )
        call = partial(
            self.service.browse, tenant_of(ctx), flt, agent_of(ctx, agent_id), cursor or None,
            _page_limit(limit),
        )  # fmt: skip
        page = await self._call(ctx, call)
        return page.model_dump_json()


def _page_limit(limit: str | None) -> int:
    """A listing's `limit` query parameter as a number (default `DEFAULT_LISTING_PAGE`)."""
    if limit is None or limit == "":
        return DEFAULT_LISTING_PAGE
    try:
        return int(limit)
    except ValueError:
        raise InvalidInputError(
            "limit", f"must be a whole number between 1 and {MAX_BROWSE_PAGE}, got {limit!r}"
        ) from None
