"""Add (or revoke) an API key in the key map the Lambda function reads.

    python infra/put_api_key.py --parameter /rearview/api-keys --tenant acme        # prints a new key
    python infra/put_api_key.py --secret rearview-api-keys --tenant acme --key - < key.txt
    python infra/put_api_key.py --parameter /rearview/api-keys --revoke --key - < key.txt

The map is the JSON object `{"sha256:<hex>": "<tenant>"}` (or `{"tenant": ..., "agent": ...}` for a
key bound to an agent) that `rearview.api.lambda_auth` reads from an SSM SecureString parameter
(`REARVIEW_API_KEYS_PARAMETER`, the template's `ApiKeysParameterName`) or a Secrets Manager secret
(`REARVIEW_API_KEYS_SECRET`). Only the digest is stored (`rearview.config.settings.hash_key`); a generated
key is printed once and never stored.

Contract: the existing map is read, validated with the Lambda's own parser (a malformed map is
refused, not overwritten), changed by one entry and written back whole; the function picks it
up within `REARVIEW_API_KEYS_MAX_AGE_S`. Two writers at the same moment can lose one update
(read-modify-write): run it from one place. Needs boto3 and rearview on the path
(`make install`, or `PYTHONPATH=functions`).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections.abc import Sequence
from typing import Any

import boto3

from rearview.api.lambda_auth import parse_key_map
from rearview.config.settings import hash_key

KeyEntry = str | dict[str, str]
"""A stored map value: the tenant, or `{"tenant": ..., "agent": ...}` for a key bound to an agent."""

KEY_PREFIX = "rv_"


class KeyMapLocation:
    """Where the map lives: one SSM parameter or one Secrets Manager secret."""

    def __init__(self, parameter: str | None, secret: str | None, region: str | None) -> None:
        self.parameter = parameter
        self.secret = secret
        self.region = region

    @property
    def name(self) -> str:
        return f"SSM parameter {self.parameter}" if self.parameter else f"secret {self.secret}"

    def read(self) -> dict[str, KeyEntry]:
        """The current map as stored ({} when the parameter or secret does not exist yet), validated."""
        raw = self._read_raw()
        if raw is None:
            return {}
        parse_key_map(raw, self.name)
        entries: dict[str, KeyEntry] = json.loads(raw)
        return entries

    def write(self, keys: dict[str, KeyEntry]) -> None:
        """Store the whole map, after validating it as the Lambda will (a bad tenant id is refused)."""
        value = json.dumps(keys, sort_keys=True)
        parse_key_map(value, self.name)
        if self.parameter:
            self._ssm().put_parameter(Name=self.parameter, Value=value, Type="SecureString", Overwrite=True)
            return
        client = self._secrets()
        try:
            client.put_secret_value(SecretId=self.secret, SecretString=value)
        except client.exceptions.ResourceNotFoundException:
            client.create_secret(Name=self.secret, SecretString=value)

    def _read_raw(self) -> str | None:
        if self.parameter:
            ssm = self._ssm()
            try:
                response = ssm.get_parameter(Name=self.parameter, WithDecryption=True)
            except ssm.exceptions.ParameterNotFound:
                return None
            return str(response["Parameter"]["Value"])
        client = self._secrets()
        try:
            return str(client.get_secret_value(SecretId=self.secret)["SecretString"])
        except client.exceptions.ResourceNotFoundException:
            return None

    def _ssm(self) -> Any:
        return boto3.client("ssm", region_name=self.region)

    def _secrets(self) -> Any:
        return boto3.client("secretsmanager", region_name=self.region)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: where the map is, which tenant (or --revoke), which key."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--parameter", help="SSM SecureString parameter name (REARVIEW_API_KEYS_PARAMETER)")
    where.add_argument("--secret", help="Secrets Manager secret id (REARVIEW_API_KEYS_SECRET)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--tenant", help="the tenant the key authenticates as")
    parser.add_argument("--agent", help="bind the key to this agent of the tenant (optional)")
    action.add_argument("--revoke", action="store_true", help="remove the key from the map")
    parser.add_argument("--key", help="the key ('-': read it from stdin); generated and printed if omitted")
    parser.add_argument("--region", default=None, help="AWS region (default: the SDK's)")
    args = parser.parse_args(argv)
    if args.revoke and not args.key:
        parser.error("--revoke needs --key")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Add or revoke one key; 0 on success. A generated key goes to stdout, nothing else does."""
    args = parse_args(argv)
    location = KeyMapLocation(args.parameter, args.secret, args.region)
    key = sys.stdin.readline().strip() if args.key == "-" else args.key
    generated = key is None
    if key is None:
        key = KEY_PREFIX + secrets.token_urlsafe(32)
    keys = location.read()
    if args.revoke:
        keys.pop(hash_key(key), None)
    else:
        keys[hash_key(key)] = {"tenant": args.tenant, "agent": args.agent} if args.agent else args.tenant
    location.write(keys)
    if generated:
        sys.stdout.write(key + "\n")
    sys.stderr.write(f"{location.name}: {len(keys)} key(s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
