"""A provider's key is resolved when the provider is built, not when io.toml loads
(#23): loading needs no key, `provider_for_run` names the variable that is missing,
the resolved key is redacted, and `build_provider` refuses an unresolved reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import (
    Config,
    ConfigError,
    MissingSecret,
    SystemClock,
    build_provider,
    check_runnable,
    load_config,
)

_TOML = ('[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:IO_KEY_A}"\n'
         '[[provider.fallback]]\nkind = "openrouter"\nmodel = "n"\n'
         'api_key = "${file:key.txt}"\n')


def _load(tmp_path: Path, env: dict[str, str]) -> Config:
    (tmp_path / "io.toml").write_text(_TOML)
    return load_config(tmp_path, env={"HOME": str(tmp_path), **env})


def test_loading_needs_no_key_and_provider_for_run_names_the_missing_one(tmp_path: Path) -> None:
    cfg = _load(tmp_path, {})
    assert cfg.provider is not None
    assert cfg.provider.api_key is None and cfg.provider.api_key_ref == "${env:IO_KEY_A}"
    with pytest.raises(MissingSecret) as missing:
        cfg.provider_for_run()
    assert missing.value.name == "IO_KEY_A"
    assert "'provider.api_key' in project scope" in missing.value.message


def test_provider_for_run_resolves_every_key_and_redacts_them(tmp_path: Path) -> None:
    (tmp_path / "key.txt").write_text("sk-from-a-file-0001\n")
    cfg = _load(tmp_path, {"IO_KEY_A": "sk-from-env-0002"})
    chain = cfg.provider_for_run()
    assert chain.api_key == "sk-from-env-0002" and chain.api_key_ref is None
    assert chain.fallback[0].api_key == "sk-from-a-file-0001"
    assert cfg.redact("a sk-from-env-0002 b sk-from-a-file-0001") == "a *** b ***"
    assert "sk-from" not in repr(cfg) and "sk-from" not in repr(chain)


def test_build_provider_refuses_a_key_that_is_still_a_reference(tmp_path: Path) -> None:
    cfg = _load(tmp_path, {})
    assert cfg.provider is not None
    with pytest.raises(ConfigError, match="still a reference"):
        build_provider(cfg.provider, env={}, clock=SystemClock())


def test_check_without_for_run_warns_and_still_builds_the_provider(tmp_path: Path) -> None:
    cfg = _load(tmp_path, {})
    warnings: list[str] = []
    check_runnable(cfg, tmp_path, env={}, for_run=False, warn=warnings.append)
    assert len(warnings) == 2
    assert "IO_KEY_A is not set" in warnings[0] and "key.txt" in warnings[1]
    with pytest.raises(MissingSecret):
        check_runnable(cfg, tmp_path, env={})
