"""`rearview move-tenant TENANT --to own|shared`: a large tenant into an OpenSearch index of its own, or back.

A move is three steps (docs/scale.md), and this command is the first and the last; which one it
runs follows from `REARVIEW_OPENSEARCH_DEDICATED_TENANTS`, the routing every server reads:

1. while the setting still routes the tenant to where it is: *copy* its documents to where it goes
   (searches and writes carry on where it is; re-running the copy is harmless);
2. the operator changes the setting and redeploys every server and job;
3. once the setting routes it to where it went: *finish*: `reconcile` the tenant there (the store
   re-applies the writes made between 1 and 2), then remove what is left where it was.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Literal

from rearview.cli.common import EXIT_FAILED, EXIT_OK
from rearview.cli.console import printable
from rearview.config.settings import Settings
from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from rearview.service.memory_service import MemoryService

SETTING = "REARVIEW_OPENSEARCH_DEDICATED_TENANTS"


def add_move_tenant(cmd: argparse.ArgumentParser) -> None:
    """`move-tenant`'s arguments: the tenant and where it goes."""
    cmd.add_argument("tenant")
    cmd.add_argument(
        "--to",
        choices=("own", "shared"),
        required=True,
        help=f"`own`: its own index; `shared`: the shared one (run before and after changing {SETTING})",
    )
    cmd.set_defaults(func=_move_tenant)


def _move_tenant(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.backends.opensearch import OpenSearchMemoryIndex
    from rearview.backends.opensearch.tenant_indexes import TenantRoutedIndex
    from rearview.backends.opensearch.tenant_moves import copy_tenant, own_index, remove_tenant
    from rearview.bootstrap import build_service

    if settings.index != "opensearch":
        raise ConfigurationError("REARVIEW_INDEX", "move-tenant moves tenants between OpenSearch indexes")
    tenant: str = args.tenant
    to: Literal["own", "shared"] = args.to
    service = build_service(settings, embedder_on_demand=True)  # only reconcile embeds
    index = service.index
    shared = index.shared if isinstance(index, TenantRoutedIndex) else index
    assert isinstance(shared, OpenSearchMemoryIndex)  # REARVIEW_INDEX=opensearch builds one of the two
    own = own_index(shared, tenant)
    routed_own = tenant in settings.dedicated_tenants
    name = printable(tenant)
    if (to == "own") != routed_own:  # step 1: copy
        source, dest = (shared, own) if to == "own" else (own, shared)
        report = copy_tenant(source, dest, tenant)
        change = "add it to" if to == "own" else "remove it from"
        print(
            f"tenant '{name}': {report.written} documents copied to {dest.config.alias}"
            f" ({report.skipped} newer there already, {report.source_docs} in {source.config.alias}).\n"
            f"Next: {change} {SETTING}, redeploy every server and job, then run this command again."
        )
        return EXIT_OK
    if not _reconciled(settings, service, tenant):  # step 3: finish
        return EXIT_FAILED
    if to == "own":
        removed = remove_tenant(shared, tenant)
        print(
            f"tenant '{name}': in {own.config.alias}; {removed} documents removed from {shared.config.alias}."
        )
    else:
        removed = remove_tenant(own, tenant)
        own.client.indices.delete(index=f"{own.config.alias}-v*", ignore=[404])
        print(f"tenant '{name}': in {shared.config.alias}; {own.config.alias} ({removed} documents) dropped.")
    return EXIT_OK


def _reconciled(settings: Settings, service: MemoryService, tenant: str) -> bool:
    """Run `reconcile` for `tenant` to the end; False (said on stderr) when it did not finish."""
    from rearview.bootstrap import build_lifecycle

    reports = build_lifecycle(settings, service).run_all(["reconcile"], tenants=[tenant])
    for report in reports:
        print(report.model_dump_json())
    if reports and all(r.complete for r in reports):
        return True
    print("reconcile did not finish: nothing removed; run this command again", file=sys.stderr)
    return False
