"""Loading and validating the build configuration outside Snakemake.

The Snakefile validates `config` against `config/config.schema.yaml` with
Snakemake's own validator; this module applies the very same schema (and its
defaults) for the command line and the tests. The package ships both files
(`annobench/core/defaults/`, links to `config/` in a checkout, their contents
in a wheel), so the commands work wherever the package is installed.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import yaml

from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import read_user_text

REPO_DIR = Path(__file__).resolve().parents[2]  # the checkout, where there is one
DEFAULTS_DIR = Path(__file__).parent / "defaults"
SCHEMA_PATH = DEFAULTS_DIR / "config.schema.yaml"
DEFAULT_CONFIG_PATH = DEFAULTS_DIR / "config.yaml"
# A config is a few kilobytes; PyYAML parses about a megabyte a second, so a larger file is refused unread.
MAX_CONFIG_BYTES = 1 << 20


class ConfigError(AnnobenchError):
    """The configuration does not follow config/config.schema.yaml."""


def validate_config(config: dict) -> dict:
    """Validate in place (filling defaults) and return the config."""
    import jsonschema
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    if not SCHEMA_PATH.is_file():
        raise FileNotFoundError(f"config schema not found at {SCHEMA_PATH}: the package is installed without "
                                "its data files; reinstall it with pip")
    try:
        validate(config, str(SCHEMA_PATH), set_default=True)
    except WorkflowError as error:
        cause = error.__cause__ or error.__context__
        if isinstance(cause, jsonschema.ValidationError):
            where = "/".join(map(str, cause.absolute_path)) or "(top level)"
            raise ConfigError(f"config {where}: {cause.message}") from None
        raise
    return config


def load_config(path: Path | str | None = None, overrides: dict | None = None) -> dict:
    """Read a config file (default: the package's copy of config/config.yaml), merge overrides, validate."""
    path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    config = _parse_yaml(_config_text(path), path) or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: a config is a mapping of settings, not a {type(config).__name__}")
    if overrides:
        config = deep_merge(config, overrides)
    return validate_config(config)


def _config_text(path: Path) -> str:
    size = path.stat().st_size if path.is_file() else 0
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: {size:,} bytes; a config is a few kilobytes (the limit is {MAX_CONFIG_BYTES:,})")
    return read_user_text(path, ConfigError)


def _parse_yaml(text: str, path: Path):
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: not valid YAML: {error.problem or error.context}{where}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split()) or 'nested too deeply'}") from None


def deep_merge(base: dict, extra: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def ingest_params(config: dict) -> dict:
    """The parameters that decide the content of the images/rejects tables and resized files."""
    # How ids are made is not here: the ids are in each shard's listing fingerprint.
    params = {
        "ingest": {key: value for key, value in config["ingest"].items() if key != "image_id"},
        "resize": config["resize"],
    }
    if config["input"]["warc"]:  # how archived images are read
        params["warc"] = {"max_image_bytes": config["warc"]["max_image_bytes"]}
    return params


def release_identity(config: dict) -> dict[str, str]:
    """The release's name, title and description: the config's, or, where it leaves one empty, a
    neutral default made from the output folder's name (never another dataset's words)."""
    release = config.get("release") or {}
    folder = Path(str(config.get("output") or "release")).resolve().name or "release"
    name = re.sub(r"[^a-z0-9]+", "-", folder.lower()).strip("-") or "release"
    return {
        "name": release.get("name") or name,
        "title": release.get("title") or f"{folder}: a dataset built by annobench",
        "description": release.get("description") or (
            f"Images, the pages they appeared in and the features, tables and benchmark annobench built "
            f"from them into {folder}."),
    }


def unnamed_release(config: dict) -> list[str]:
    """The keys of release.name / title / description the config leaves empty."""
    release = config.get("release") or {}
    return [f"release.{key}" for key in ("name", "title", "description") if not release.get(key)]
