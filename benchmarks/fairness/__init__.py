"""One tenant beside another: a tenant's latency while another runs at its limits, ingests at the
maximum, or holds a far larger corpus (SQLite and OpenSearch)."""
