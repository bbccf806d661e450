"""`config.toml` refuses to start on a typo or malformed TOML, in one line, instead of failing open."""

from __future__ import annotations

from pathlib import Path

import pytest

from rearview.cli import main
from rearview.config.settings import Settings
from rearview.errors import ConfigurationError


def settings_with(tmp_path: Path, text: str) -> Settings:
    config = tmp_path / "config.toml"
    config.write_text(text)
    return Settings.load(data_dir=tmp_path, config_file=config)


def refusal(settings: Settings) -> str:
    with pytest.raises(ConfigurationError) as caught:
        settings.api_keys()
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[api_key]\n"sk-a" = "alice"\n', "unknown `api_key` (did you mean `api_keys`?)"),
        (
            "[lifecycle.tenant.acme]\nworking_days = 2\n",
            "unknown `lifecycle.tenant` (did you mean `lifecycle.tenants`?)",
        ),
        (
            "[lifecycle.tenants.acme]\nretention_day = 2\n",
            "unknown `lifecycle.tenants.acme.retention_day` (did you mean `lifecycle.tenants.acme.retention_days`?)",
        ),
        (
            '[api_keys]\n"sk-a" = { tenat = "alice" }\n',
            "unknown `api_keys.<key>.tenat` (did you mean `api_keys.<key>.tenant`?)",
        ),
        ("api_keys = {}\nport = 9000\n", "unknown `port` (valid: `api_keys`, `lifecycle`)"),
    ],
)
def test_an_unknown_table_or_key_refuses_to_start_naming_it_and_the_closest_name(
    tmp_path: Path, text: str, named: str
) -> None:
    message = refusal(settings_with(tmp_path, text))
    assert str(tmp_path / "config.toml") in message and named in message
    assert "sk-a" not in message  # an API key is a secret: never echoed


def test_malformed_toml_is_one_line_naming_the_file_and_the_line(tmp_path: Path) -> None:
    message = refusal(settings_with(tmp_path, '[api_keys]\n"sk-a" = "alice"\n"sk-b" alice\n'))
    assert str(tmp_path / "config.toml") in message and "is not valid TOML" in message
    assert "line 3" in message and "sk-b" not in message


def test_both_forms_of_an_api_key_binding_are_known_names(tmp_path: Path) -> None:
    text = '[api_keys]\n"sk-a" = "alice"\n"sk-b" = { tenant = "bob", agent = "claude-code" }\n'
    settings = settings_with(tmp_path, text + "[lifecycle.tenants.bob]\nworking_days = 2\n")
    assert settings.tenant_lifecycle()["bob"].working_days == 2  # the file, table form included, was read


def test_serve_refuses_a_misspelt_keys_table_instead_of_starting_keyless(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[api_key]\n"sk-a" = "alice"\n')
    assert main(["--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown `api_key` (did you mean `api_keys`?)" in err
