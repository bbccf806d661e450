"""The commands that read the memories in place, or rebuild the index: `search`, `stats`, `reindex`.

`search` here never reinforces what it finds (a look, not a recall).
"""

from __future__ import annotations

import argparse
import sys

from rearview.cli.common import EXIT_OK, LOCAL_TENANT_HELP, tenant_of
from rearview.cli.console import plural, printable, progress
from rearview.config.settings import Settings
from rearview.models import DEFAULT_AGENT


def add_search(cmd: argparse.ArgumentParser) -> None:
    """`search`'s arguments: the query, how many results, as which agent, and the output format."""
    cmd.add_argument("query")
    cmd.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    cmd.add_argument("-k", "--top-k", type=int, default=10)
    cmd.add_argument(
        "--agent", default=DEFAULT_AGENT, help="search as this agent (shared memories and its private ones)"
    )
    cmd.add_argument("--json", action="store_true", help="print the full result as JSON")
    cmd.set_defaults(func=_search)


def add_stats(cmd: argparse.ArgumentParser) -> None:
    """`stats`' options: the tenant."""
    cmd.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    cmd.set_defaults(func=_stats)


def add_reindex(cmd: argparse.ArgumentParser) -> None:
    """`reindex`'s options: the tenant (default: all)."""
    cmd.add_argument("--tenant", help="only this tenant (default: all)")
    cmd.set_defaults(func=_reindex)


def _search(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.models import SearchRequest

    result = build_service(settings).search(
        tenant_of(settings, args),
        SearchRequest(query=args.query, top_k=args.top_k, reinforce=False, agent_id=args.agent),
    )
    if args.json:
        print(result.model_dump_json(indent=2))
        return EXIT_OK
    for rank, hit in enumerate(result.results, start=1):
        label = f"{hit.type.value}, {hit.event_time:%Y-%m-%d}"
        print(f"{rank:>2}. [{hit.score:.3f}] ({label}) {printable(hit.content)}  <{printable(hit.id)}>")
    if not result.results:
        print("(no matching memories)")
    if result.degraded:
        print(f"degraded: {printable(result.degraded_reason or '')}", file=sys.stderr)
    return EXIT_OK


def _stats(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service

    service = build_service(settings, embedder_on_demand=True)
    print(service.stats(tenant_of(settings, args)).model_dump_json(indent=2))
    return EXIT_OK


def _reindex(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.service.reindex import reindex_all

    service = build_service(settings)
    tenants = [args.tenant] if args.tenant else service.store.tenants()
    with progress(None, "memory", "reindex") as advance:
        indexed = reindex_all(service, tenants, progress=advance)
    for tenant, total in indexed.items():
        print(f"tenant '{printable(tenant)}': {plural(total, 'memory', 'memories')} indexed")
    return EXIT_OK
