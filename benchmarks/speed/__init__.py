"""Latency and throughput: search by corpus size and under concurrent clients, writes, ingest, reindex,
the lifecycle jobs, and cold starts (the handler in process and the built function under the emulator)."""
