"""Vault configuration and filter validation: errors name the valid values."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from layersearch.corpora.vault import load_config, parse_iso_date, validate_filters
from layersearch.corpora.vault.config import VaultConfig
from layersearch.errors import ConfigError, LimitExceeded


def test_fixture_config(vault: Path) -> None:
    config = load_config(vault)
    assert "finance" in config.domains and "runbook" in config.note_types
    assert "resolved" in config.statuses


def test_no_config_accepts_anything(tmp_path: Path) -> None:
    filters = validate_filters(load_config(tmp_path), domain="Anything", note_type="x")
    assert (filters.domain, filters.note_type) == ("anything", "x")


def test_top_level_keys_and_bad_files(tmp_path: Path) -> None:
    cfg = tmp_path / ".layersearch-vault.toml"
    cfg.write_text('domains = ["Finance"]\n')
    assert load_config(tmp_path).domains == ("finance",)
    cfg.write_text("domains = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path)
    cfg.write_text('domain = ["x"]\n')
    with pytest.raises(ConfigError, match="unknown key.*valid keys: domains"):
        load_config(tmp_path)
    cfg.write_text('domains = "finance"\n')
    with pytest.raises(ConfigError, match="list of non-empty strings"):
        load_config(tmp_path)


def test_undeclared_values_list_valid_ones(vault: Path) -> None:
    config = load_config(vault)
    with pytest.raises(ConfigError, match=r"unknown domain 'sales'.*data-platform, finance"):
        validate_filters(config, domain="sales")
    with pytest.raises(ConfigError, match=r"unknown note_type 'memo'.*decision, howto"):
        validate_filters(config, note_type="memo")
    with pytest.raises(ConfigError, match=r"unknown status 'wip'.*active"):
        validate_filters(config, status="wip")
    assert validate_filters(config, domain="Finance").domain == "finance"


@pytest.mark.parametrize("limit", [0, -3, "10", 2.5, True])
def test_bad_limit(limit: object) -> None:
    with pytest.raises(ConfigError, match="limit"):
        validate_filters(VaultConfig(), limit=limit)  # type: ignore[arg-type]


def test_limit_bound() -> None:
    with pytest.raises(LimitExceeded):
        validate_filters(VaultConfig(), limit=10_000)


@pytest.mark.parametrize("bad", ["2024/03/05", "March 5, 2024", "2024-13-01", "2024-3-5", ""])
def test_bad_dates_say_expected_format(bad: str) -> None:
    with pytest.raises(ConfigError, match="expected YYYY-MM-DD"):
        parse_iso_date(bad)
    with pytest.raises(ConfigError, match="YYYY-MM-DD"):
        validate_filters(VaultConfig(), date_range=(bad, None))


def test_date_ranges() -> None:
    f = validate_filters(VaultConfig(), date_range="2024-01-01..2024-02-01")
    assert (f.date_from, f.date_to) == (date(2024, 1, 1), date(2024, 2, 1))
    assert validate_filters(VaultConfig(), date_range=[None, "2024-02-01"]).date_from is None
    with pytest.raises(ConfigError, match="after its end"):
        validate_filters(VaultConfig(), date_range=("2024-03-01", "2024-02-01"))
    with pytest.raises(ConfigError, match="two items"):
        validate_filters(VaultConfig(), date_range=("2024-03-01",))
    with pytest.raises(ConfigError, match="START..END"):
        validate_filters(VaultConfig(), date_range="2024-03-01")


def test_tags_string_is_not_characters() -> None:
    assert validate_filters(VaultConfig(), tags="#Project/Alpha").tags == ("project/alpha",)
    assert validate_filters(VaultConfig(), tags="a, b").tags == ("a", "b")
