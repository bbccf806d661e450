"""The `rearview` command: serve the MCP endpoint; import/search/stats/reindex; run the lifecycle jobs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rearview.errors import RearviewError
from rearview.settings import Settings

if TYPE_CHECKING:
    from rearview.service.job_names import JobName
    from rearview.service.lifecycle import LifecycleTimer
    from rearview.service.memory_service import MemoryService

LOCAL_TENANT_HELP = "tenant to act on (default: the configured default tenant)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    _calm_math_threads()
    parser = _parser()
    args = parser.parse_args(argv)
    settings = Settings.load(data_dir=args.data_dir, config_file=getattr(args, "config", None))
    try:
        result: int = args.func(settings, args)
    except RearviewError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return result


def _calm_math_threads() -> None:
    """Before numpy loads: one BLAS thread, and OpenMP threads that sleep instead of spinning.

    A query is one matrix-vector product, memory-bound: a second BLAS thread gains nothing and,
    with the other core busy, stalls it (10k rows: 0.13 ms on one thread, 8-16 ms on two). Spinning
    OpenMP workers in the embedder did the same to concurrent requests. A user's own setting wins.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rearview", description="Long-term memory for LLM agents (MCP over HTTP)."
    )
    parser.add_argument("--data-dir", type=Path, help="where the embedded backend keeps its files")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve MCP over HTTP at http://HOST:PORT/mcp")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8080)")
    serve.add_argument("--config", type=Path, help="TOML file with [api_keys] key = tenant")
    serve.set_defaults(func=_serve)

    imp = sub.add_parser("import", help="load memories from a JSON Lines file (one WriteRequest per line)")
    imp.add_argument("file", type=Path)
    imp.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    imp.set_defaults(func=_import)

    search = sub.add_parser("search", help="search memories and print the results")
    search.add_argument("query")
    search.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    search.add_argument("-k", "--top-k", type=int, default=10)
    search.add_argument("--json", action="store_true", help="print the full result as JSON")
    search.set_defaults(func=_search)

    stats = sub.add_parser("stats", help="print counts by type and status")
    stats.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    stats.set_defaults(func=_stats)

    reindex = sub.add_parser("reindex", help="rebuild the search index from the store")
    reindex.add_argument("--tenant", help="only this tenant (default: all)")
    reindex.set_defaults(func=_reindex)

    for job, text in JOB_HELP.items():
        cmd = sub.add_parser(job, help=text)
        cmd.add_argument("--tenant", help="only this tenant (default: all)")
        cmd.add_argument(
            "--budget-s",
            type=float,
            default=None,
            help="stop after this many seconds (exit status 3); the next run resumes where it stopped",
        )
        cmd.set_defaults(func=_job, job=job)
    return parser


JOB_HELP: dict[JobName, str] = {
    "decay": "archive memories whose strength decayed below the threshold (importance 5 never)",
    "archive": "archive memories that reach their retention before the next run (renew recalled ones)",
    "reconcile": "rewrite stale index documents, drop those of archived/deleted memories, index missing ones",
}


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from rearview.api.app import LOOPBACK, create_app
    from rearview.api.auth import ApiKeyResolver
    from rearview.bootstrap import build_service

    settings = settings.model_copy(
        update={k: v for k, v in {"host": args.host, "port": args.port}.items() if v}
    )
    keys = settings.api_keys()
    if not keys and settings.host not in LOOPBACK:
        raise RearviewError(
            f"refusing to serve on {settings.host} without API keys: add [api_keys] to "
            f"{settings.config_file or settings.data_dir / 'config.toml'} or bind to 127.0.0.1"
        )
    service = build_service(settings)
    resolver = ApiKeyResolver(keys, settings.default_tenant if not keys else None)
    app = create_app(
        service,
        resolver,
        host=settings.host,
        public_url=settings.public_url,
        trust_forwarded_headers=settings.trust_forwarded_headers,
    )
    mode = f"{len(keys)} API key(s)" if keys else f"no API keys: single tenant '{settings.default_tenant}'"
    print(f"Rearview MCP at http://{settings.host}:{settings.port}/mcp ({mode}; data in {settings.data_dir})")
    timer = _lifecycle_timer(settings, service)
    try:
        # uvicorn rewrites the scheme and client from X-Forwarded-* by default; only behind a proxy
        proxied = settings.trust_forwarded_headers
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning", proxy_headers=proxied)
    finally:
        if timer is not None:
            timer.stop()
    return 0


def _lifecycle_timer(settings: Settings, service: MemoryService) -> LifecycleTimer | None:
    """The background decay + archive rounds of `rearview serve` (None when the interval is 0)."""
    if settings.lifecycle_interval_s <= 0:
        return None
    from rearview.bootstrap import build_lifecycle
    from rearview.service.lifecycle import LifecycleTimer

    timer = LifecycleTimer(
        build_lifecycle(settings, service), settings.lifecycle_interval_s, settings.lifecycle_budget_s
    )
    timer.start()
    print(
        f"lifecycle jobs every {settings.lifecycle_interval_s:g} s (REARVIEW_LIFECYCLE_INTERVAL_S=0 disables)"
    )
    return timer


def _job(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_lifecycle, build_service
    from rearview.service.lifecycle import Deadline

    lifecycle = build_lifecycle(settings, build_service(settings))
    budget = Deadline(args.budget_s) if args.budget_s else None
    tenants = [args.tenant] if args.tenant else None
    reports = lifecycle.run_all([args.job], tenants=tenants, budget=budget)
    for report in reports:
        print(report.model_dump_json())
    if not reports:
        print("(no tenants)")
    return 0 if all(r.complete for r in reports) else 3


def _tenant(settings: Settings, args: argparse.Namespace) -> str:
    return str(args.tenant or settings.default_tenant)


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise RearviewError(f"{path}:{number}: not JSON ({exc.msg})") from exc


def _import(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError
    from tqdm import tqdm

    from rearview.bootstrap import build_service
    from rearview.models import WriteRequest

    service = build_service(settings)
    tenant = _tenant(settings, args)
    lines = sum(1 for line in args.file.open(encoding="utf-8") if line.strip())
    counts: dict[str, int] = {}
    failures = 0
    for number, record in tqdm(_read_jsonl(args.file), total=lines, unit="memory", desc="import"):
        try:
            action = service.write(tenant, WriteRequest.model_validate(record)).action.value
        except (ValidationError, RearviewError) as exc:
            failures += 1
            print(f"{args.file}:{number}: skipped: {exc}".replace("\n", " "), file=sys.stderr)
            continue
        counts[action] = counts.get(action, 0) + 1
    print(f"imported into tenant '{tenant}': {counts or 'nothing'}; {failures} skipped")
    return 1 if failures else 0


def _search(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.models import SearchRequest

    result = build_service(settings).search(
        _tenant(settings, args), SearchRequest(query=args.query, top_k=args.top_k, reinforce=False)
    )
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    for rank, hit in enumerate(result.results, start=1):
        label = f"{hit.type.value}, {hit.event_time:%Y-%m-%d}"
        print(f"{rank:>2}. [{hit.score:.3f}] ({label}) {hit.content}  <{hit.id}>")
    if not result.results:
        print("(no matching memories)")
    if result.degraded:
        print(f"degraded: {result.degraded_reason}", file=sys.stderr)
    return 0


def _stats(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service

    print(build_service(settings).stats(_tenant(settings, args)).model_dump_json(indent=2))
    return 0


def _reindex(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from rearview.bootstrap import build_service
    from rearview.service.reindex import reindex_all

    service = build_service(settings)
    tenants = [args.tenant] if args.tenant else service.store.tenants()
    with tqdm(unit="memory", desc="reindex") as bar:
        counts = reindex_all(service, tenants, progress=bar.update)
    for tenant, total in counts.items():
        print(f"tenant '{tenant}': {total} memories indexed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
