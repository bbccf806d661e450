"""Every capability the server advertises is served, in both protocol eras (official client, real HTTP)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from mcp import Client
from mcp.types import ServerCapabilities

from tests.e2e.server import running_server
from tests.mcp_client import MODES, call, connect

PROFILE = "memory://profile/default"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("data")) as u:
        yield u


async def advertised(client: Client) -> ServerCapabilities:
    """What the server advertises in this era: the initialize result, or the raw `server/discover` answer.

    Raw because the client's `discover()` in mcp 2.3 reads back empty capabilities from this server.
    """
    if client.protocol_version == "2026-07-28":
        raw = await client.session.send_discover(client.protocol_version)
        return ServerCapabilities.model_validate(raw["capabilities"])
    return client.server_capabilities


async def use_tools(client: Client) -> None:
    assert (await client.list_tools()).tools
    assert "total" in await call(client, "memory_stats", {})


async def use_prompts(client: Client) -> None:
    (prompt,) = (await client.list_prompts()).prompts
    assert (await client.get_prompt(prompt.name)).messages


async def use_resources(client: Client) -> None:
    await client.list_resources()
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [
        "memory://profile/{agent_id}",
        "memory://memories{?tag,type,session_id,cursor,limit,agent_id}",
    ]
    assert (await client.read_resource(PROFILE)).contents
    assert (await client.read_resource("memory://memories?limit=1")).contents


async def use_subscribe(client: Client) -> None:
    await client.subscribe_resource(PROFILE)
    await client.unsubscribe_resource(PROFILE)


async def use_logging(client: Client) -> None:
    await client.set_logging_level("warning")


async def use_completions(client: Client) -> None:
    await client.complete(
        {"type": "ref/resource", "uri": "memory://profile/{agent_id}"}, {"name": "agent_id", "value": "d"}
    )


# Capability (or `capability.flag` set to true) -> the calls that prove it is served. An advertised
# capability missing here fails the test: add its calls, or stop advertising it.
EXERCISE: dict[str, Callable[[Client], Awaitable[None]]] = {
    "tools": use_tools,
    "prompts": use_prompts,
    "resources": use_resources,
    "resources.subscribe": use_subscribe,
    "logging": use_logging,
    "completions": use_completions,
}


def advertised_names(capabilities: ServerCapabilities) -> list[str]:
    """Each advertised capability, and each of its flags that is true, as `name` / `name.flag`."""
    names: list[str] = []
    dumped: dict[str, Any] = capabilities.model_dump(by_alias=True, exclude_none=True)
    for name, settings in dumped.items():
        names.append(name)
        flags = settings.items() if isinstance(settings, dict) else []
        names += [f"{name}.{flag}" for flag, on in flags if on is True]
    return names


@pytest.mark.parametrize("mode", MODES)
async def test_every_advertised_capability_is_served(url: str, mode: str) -> None:
    async with connect(url, mode) as client:
        names = advertised_names(await advertised(client))
        assert {"tools", "prompts", "resources"} <= set(names)
        unproven = [n for n in names if n not in EXERCISE]
        assert not unproven, f"advertised but not exercised (or not served): {unproven}"
        for name in names:
            await EXERCISE[name](client)


@pytest.mark.parametrize("mode", MODES)
async def test_no_change_notifications_are_promised(url: str, mode: str) -> None:
    """Stateless JSON responses carry no server push: no `listChanged`, no resource subscriptions."""
    async with connect(url, mode) as client:
        names = advertised_names(await advertised(client))
        assert not [n for n in names if n.endswith((".listChanged", ".subscribe"))]
