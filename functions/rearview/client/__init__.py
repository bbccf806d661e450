"""The Python API: `Memory`, the MCP tools' operations from Python, embedded or against a server.

`from rearview import Memory` loads this package on first use (`rearview/__init__.py`), and this
package loads the service or the `mcp` client only when a `Memory` makes its first call.
"""

from rearview.client.memory import Memory

__all__ = ["Memory"]
