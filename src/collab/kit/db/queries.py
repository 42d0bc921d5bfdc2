"""Named SQL blocks loaded from a domain's queries.sql ("-- name: get_thing")."""

import re
from pathlib import Path

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


class Queries:
    """Attribute access to the named blocks of one queries.sql file."""

    def __init__(self, path: str | Path):
        text = Path(path).read_text()
        parts = _NAME.split(text)
        self._sql: dict[str, str] = {}
        for name, body in zip(parts[1::2], parts[2::2]):
            sql = body.strip().rstrip(";").strip()
            if name in self._sql:
                raise ValueError(f"{path}: query {name!r} defined twice")
            self._sql[name] = sql

    @classmethod
    def beside(cls, module_file: str) -> "Queries":
        """The queries.sql next to a module (call with __file__)."""
        return cls(Path(module_file).with_name("queries.sql"))

    def __getattr__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise AttributeError(f"no query named {name!r}") from None
