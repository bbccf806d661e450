"""`MemoryIndex` on OpenSearch k-NN + BM25: a managed domain, a Serverless vector collection, or a local node.

- `config`: `OpenSearchConfig` (where the index lives, how it is built and queried), signing, the client.
- `mapping`: an index version's settings and strict mapping, and a memory's indexed document.
- `queries`: the channels' shared filter, the id lookup, reading the answers; `keyword_queries` and
  `vector_queries`: each search channel's request bodies and its answer.
- `ids`: document identity, own `_id`s or engine-assigned ones (Serverless), as two strategies.
- `index`: `OpenSearchMemoryIndex`, the adapter (schema and alias lifecycle, writes, search).
"""

from rearview.backends.opensearch.config import OpenSearchConfig, build_client, signing_auth
from rearview.backends.opensearch.index import OpenSearchMemoryIndex
from rearview.backends.opensearch.mapping import INDEX_ANALYZER, QUERY_ANALYZER, index_body
from rearview.backends.opensearch.queries import filter_clauses

__all__ = [
    "INDEX_ANALYZER",
    "QUERY_ANALYZER",
    "OpenSearchConfig",
    "OpenSearchMemoryIndex",
    "build_client",
    "filter_clauses",
    "index_body",
    "signing_auth",
]
