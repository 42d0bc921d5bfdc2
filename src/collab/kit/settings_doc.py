"""docs/configuration.md, rendered from the field descriptions of `collab.config.Settings`."""

from typing import cast

from pydantic.fields import FieldInfo

from collab.config import Settings

COMMAND = "collab config-doc > docs/configuration.md"
HEADER = f"""# Configuration

<!-- Generated from the field descriptions in src/collab/config.py: edit those, then run `{COMMAND}`.
tests/architecture/test_configuration_doc.py fails when this file and the settings differ. -->

Every setting is an environment variable with the prefix `COLLAB_`, read once by `collab.config.Settings`.
Seconds, bytes and counts are plain numbers; a rate limit is a count per `second`, `minute`, `hour` or `day`, or
per several of them: `10/hour`, `100/5minutes`.
"""
KIB, MIB = 1024, 1024 * 1024


def render() -> str:
    """The whole of docs/configuration.md: one table per section, the settings in declaration order."""
    prefix = Settings.model_config["env_prefix"]
    lines = [HEADER.rstrip("\n")]
    for name, field in Settings.model_fields.items():
        section = section_of(field)
        if section:
            lines += ["", f"## {section}", "", "| variable | default | meaning |", "|---|---|---|"]
        lines.append(f"| `{prefix}{name.upper()}` | {default_cell(name, field)} | {_cell(field.description or '')} |")
    return "\n".join(lines) + "\n"


def section_of(field: FieldInfo) -> str | None:
    """The section a field opens (`json_schema_extra={"section": ...}`), if it opens one."""
    extra = field.json_schema_extra
    # The settings name a section with a string (JSON schema extras are typed as any JSON value).
    return cast("str | None", extra.get("section")) if isinstance(extra, dict) else None


def default_cell(name: str, field: FieldInfo) -> str:
    """The default as one would write it in the environment, with sizes and long durations spelled out."""
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = f"`{value}`"
    if isinstance(value, int) and name.endswith("_bytes") and value >= KIB and value % KIB == 0:
        text += f" ({value // MIB} MiB)" if value % MIB == 0 else f" ({value // KIB} KiB)"
    elif isinstance(value, int) and name.endswith("_s") and value >= 3600 and value % 3600 == 0:
        text += f" ({value // 3600} h)"
    return text


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
