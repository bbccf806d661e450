"""Retrieval quality: what a search finds (LoCoMo, the everyday set, small tenants, the relevance model,
near-duplicate merges), in process and through a served `rearview serve`."""
