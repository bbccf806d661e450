"""Lambda entry points: thin adapters from AWS events to the Rearview service."""
