"""`python -m rearview.api.tools`: rewrite `schemas.json` from the tools as they are now (`tools.schemas`)."""

import json
import sys

from rearview.api.tools.registry import eager_tools
from rearview.api.tools.schemas import SCHEMAS_PATH, generated_schemas
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.service.memory_service import MemoryService


def main() -> int:
    """Write `schemas.json`; exit status 0."""
    service = MemoryService(InMemoryMemoryStore(), InMemoryMemoryIndex(8), HashingEmbedder(8))
    text = json.dumps(generated_schemas(eager_tools(service)), indent=1) + "\n"
    SCHEMAS_PATH.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMAS_PATH}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
