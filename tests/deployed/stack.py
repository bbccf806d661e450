"""template.yaml read the way CloudFormation would for one set of parameters: what the deployed tier runs.

`Stack(template, parameters, names)` resolves the intrinsic functions (`Ref`, `Fn::Sub`, `Fn::If`
with the template's `Conditions`, `Fn::GetAtt`, `Fn::Join`, `Fn::Equals` & co.) against the
parameters (template defaults, then the given overrides), pseudo parameters and the physical
names the tier gave the resources (`names`: logical id -> name; a queue's `Arn` and `QueueName`
follow from it). From it the tier takes, never restating them: each function's handler, timeout,
memory and environment (Globals + the function's own), the HTTP API's routes, the schedules'
`Input` and retry policy, the stream mapping's filter, batch and retry settings, and the
dead-letter queues each failure goes to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["FunctionSpec", "Schedule", "Stack", "StreamMapping", "load"]

ACCOUNT = "123456789012"
REGION = "us-east-1"


class _Tagged(yaml.SafeLoader):
    """SafeLoader turning CloudFormation short forms into their long forms (`!Ref x` -> `{"Ref": x}`)."""


def _long_form(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "Condition":
        return {"Condition": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_Tagged.add_multi_constructor("!", _long_form)


def load(path: Path) -> dict[str, Any]:
    """The template as data, intrinsic functions in long form."""
    with path.open(encoding="utf-8") as fh:
        data = yaml.load(fh, Loader=_Tagged)  # a SafeLoader subclass: plain data only
    assert isinstance(data, dict)
    return data


_NO_VALUE = object()


@dataclass(frozen=True)
class Schedule:
    """One `ScheduleV2` event of a function: what EventBridge Scheduler delivers, and its retries."""

    name: str
    input: dict[str, Any]
    retry_attempts: int
    dead_letter_queue: str | None  # logical id


@dataclass(frozen=True)
class StreamMapping:
    """The DynamoDB event source mapping of a function."""

    filter_patterns: list[dict[str, Any]]
    batch_size: int
    retry_attempts: int
    bisect_on_error: bool
    report_batch_item_failures: bool
    dead_letter_queue: str | None  # logical id


@dataclass(frozen=True)
class FunctionSpec:
    """What Lambda knows of one function: handler, limits, environment, and what invokes it."""

    logical_id: str
    handler: str
    timeout_s: int
    memory_mb: int
    architecture: str
    environment: dict[str, str]
    async_retry_attempts: int = 2
    async_dead_letter_queue: str | None = None
    schedules: list[Schedule] = field(default_factory=list)
    streams: list[StreamMapping] = field(default_factory=list)


class Stack:
    """The template under one set of parameter values (see the module docstring)."""

    def __init__(
        self,
        template: dict[str, Any],
        parameters: dict[str, str] | None = None,
        names: dict[str, str] | None = None,
        stack_name: str = "rearview-deployed",
    ) -> None:
        self.template = template
        declared = template.get("Parameters", {})
        unknown = set(parameters or {}) - set(declared)
        if unknown:
            raise ValueError(f"parameters not in the template: {sorted(unknown)}")
        self.parameters: dict[str, Any] = {name: spec.get("Default") for name, spec in declared.items()}
        for name, value in (parameters or {}).items():
            allowed = declared[name].get("AllowedValues")
            if allowed is not None and value not in [str(a) for a in allowed]:
                raise ValueError(f"parameter {name}={value!r} is not one of {allowed}")
            self.parameters[name] = value
        self.names = dict(names or {})
        self.pseudo = {
            "AWS::StackName": stack_name,
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        self._conditions: dict[str, bool] = {}

    # ------------------------------------------------------------------ intrinsics

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            value = self.resolve(self.template["Conditions"][name])
            assert isinstance(value, bool), name
            self._conditions[name] = value
        return self._conditions[name]

    def resolve(self, value: Any) -> Any:
        """`value` with every intrinsic function evaluated (`AWS::NoValue` entries dropped)."""
        if isinstance(value, list):
            items = [self.resolve(v) for v in value]
            return [v for v in items if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self._ref(arg)
            if key == "Condition":
                return self.condition(arg)
            if key.startswith("Fn::"):
                return self._function(key[4:], arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.parameters:
            value = self.parameters[name]
            kind = self.template["Parameters"][name].get("Type", "String")
            if kind == "CommaDelimitedList":
                return [v for v in str(value).split(",") if v] if isinstance(value, str) else value
            return str(value) if value is not None else ""
        if name in self.names:
            return self._physical(name, "Ref")
        raise KeyError(f"Ref {name}: no parameter, pseudo parameter or named resource (give it a name)")

    def _physical(self, logical_id: str, attribute: str) -> str:
        name = self.names[logical_id]
        kind = self.template["Resources"][logical_id]["Type"]
        if kind == "AWS::SQS::Queue":
            url = f"http://sqs.{REGION}.localhost/{ACCOUNT}/{name}"
            return {"Ref": url, "Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}", "QueueName": name}[attribute]
        if attribute == "Ref":
            return name
        if kind == "AWS::DynamoDB::Table" and attribute in ("Arn", "StreamArn"):
            table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
            return table if attribute == "Arn" else f"{table}/stream/latest"
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{name}"
        raise KeyError(f"GetAtt {logical_id}.{attribute} is not known to the deployed tier")

    def _function(self, name: str, arg: Any) -> Any:
        if name == "If":
            condition, then, otherwise = arg
            return self.resolve(then if self.condition(condition) else otherwise)
        if name == "Equals":
            left, right = (self.resolve(a) for a in arg)
            return str(left) == str(right)
        if name == "Not":
            return not self.resolve(arg[0])
        if name == "And":
            return all(self.resolve(a) for a in arg)
        if name == "Or":
            return any(self.resolve(a) for a in arg)
        if name == "Join":
            separator, items = arg
            return str(separator).join(str(v) for v in self.resolve(items))
        if name == "GetAtt":
            return self._physical(arg[0], arg[1])
        if name == "Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))
            return re.sub(r"\$\{([^}!]+)\}", lambda m: self._sub_variable(m.group(1), variables), text)
        raise NotImplementedError(f"Fn::{name} is not supported by the deployed tier's resolver")

    def _sub_variable(self, name: str, variables: dict[str, Any]) -> str:
        if name in variables:
            return str(variables[name])
        if "." in name:
            logical_id, attribute = name.split(".", 1)
            return self._physical(logical_id, attribute)
        return str(self._ref(name))

    # ------------------------------------------------------------------ resources

    def resource(self, logical_id: str) -> dict[str, Any]:
        """The resolved `Properties` of a resource."""
        properties = self.resolve(self.template["Resources"][logical_id].get("Properties", {}))
        assert isinstance(properties, dict)
        return properties

    def function(self, logical_id: str) -> FunctionSpec:
        """A function as Lambda would configure it: Globals merged under its own properties."""
        # Only what Lambda's configuration needs: layers, policies and log groups name resources
        # the tier has no names for (the layer is the built one, whatever its ARN).
        wanted = ("Handler", "Timeout", "MemorySize", "Architectures", "Environment", "EventInvokeConfig")
        raw_globals = self.template.get("Globals", {}).get("Function", {})
        globals_ = {key: self.resolve(raw_globals[key]) for key in wanted if key in raw_globals}
        raw = self.template["Resources"][logical_id]["Properties"]
        own = {key: self.resolve(raw[key]) for key in wanted if key in raw}
        environment = {
            **globals_.get("Environment", {}).get("Variables", {}),
            **own.get("Environment", {}).get("Variables", {}),
        }
        invoke_config = own.get("EventInvokeConfig", {})
        spec = FunctionSpec(
            logical_id=logical_id,
            handler=str(own.get("Handler", globals_.get("Handler"))),
            timeout_s=int(own.get("Timeout", globals_.get("Timeout", 3))),
            memory_mb=int(own.get("MemorySize", globals_.get("MemorySize", 128))),
            architecture=(own.get("Architectures") or globals_.get("Architectures") or ["x86_64"])[0],
            environment={k: _env_string(v) for k, v in environment.items()},
            async_retry_attempts=int(invoke_config.get("MaximumRetryAttempts", 2)),
            async_dead_letter_queue=_queue_of(invoke_config.get("DestinationConfig", {}).get("OnFailure")),
        )
        for event in raw.get("Events", {}).values():
            properties = self.resolve(event.get("Properties", {}))
            if event["Type"] == "ScheduleV2":
                spec.schedules.append(
                    Schedule(
                        name=properties["Name"],
                        input=json.loads(properties.get("Input", "{}")),
                        retry_attempts=int(
                            properties.get("RetryPolicy", {}).get("MaximumRetryAttempts", 185)
                        ),
                        dead_letter_queue=_queue_of(properties.get("DeadLetterConfig")),
                    )
                )
            elif event["Type"] == "DynamoDB":
                filters = properties.get("FilterCriteria", {}).get("Filters", [])
                spec.streams.append(
                    StreamMapping(
                        filter_patterns=[json.loads(f["Pattern"]) for f in filters],
                        batch_size=int(properties.get("BatchSize", 100)),
                        retry_attempts=int(properties.get("MaximumRetryAttempts", -1)),
                        bisect_on_error=bool(properties.get("BisectBatchOnFunctionError", False)),
                        report_batch_item_failures="ReportBatchItemFailures"
                        in properties.get("FunctionResponseTypes", []),
                        dead_letter_queue=_queue_of(properties.get("DestinationConfig", {}).get("OnFailure")),
                    )
                )
        return spec

    def routes(self) -> list[str]:
        """Route keys (`"POST /mcp"`, `"GET /ui/{proxy+}"`) of the HTTP API under these parameters."""
        keys = []
        for resource in self.template["Resources"].values():
            if resource["Type"] != "AWS::ApiGatewayV2::Route":
                continue
            condition = resource.get("Condition")
            if condition is None or self.condition(condition):
                keys.append(str(self.resolve(resource["Properties"]["RouteKey"])))
        return keys

    def queue_name(self, logical_id: str) -> str:
        return self.names[logical_id]


def _env_string(value: Any) -> str:
    """Lambda environment values are strings (CloudFormation stringifies numbers and booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _queue_of(destination: Any) -> str | None:
    """The queue's ARN a `DestinationConfig.OnFailure` / `DeadLetterConfig` names (resolved)."""
    if not isinstance(destination, dict):
        return None
    arn = destination.get("Destination") or destination.get("Arn")
    return str(arn) if arn else None
