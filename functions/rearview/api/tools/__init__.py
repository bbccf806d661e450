"""The MCP tools, prompt and resources: thin adapters from tool arguments to MemoryService calls.

Tool names are a contract (see DESIGN.md). Descriptions tell the model *when* to call each tool;
parameter descriptions are read by the model too. The tenant comes from the authenticated
request (`api/auth.py`), never from an argument; so does the agent when the credential is bound
to one (`agent_of`), else it is the `agent_id` argument.

One module per capability, as `service/` is split: `writing` (write, update, forget, restore),
`recall` (search, get, history), `ingest` (ingest, summarize) and `overview` (stats, the profile
and listing resources). `base` holds what they share (the caller, the argument types, the write
lane's `_call`), `lanes` where calls run, and `registry` what the server is given (`strict_tools`,
`register`, the guidelines prompt).
"""

from rearview.api.tools.lanes import Lanes, search_lane
from rearview.api.tools.registry import register, strict_tools

__all__ = ["Lanes", "register", "search_lane", "strict_tools"]
