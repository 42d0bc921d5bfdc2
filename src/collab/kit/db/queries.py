"""Named SQL blocks loaded from a .sql file: "-- name: get_thing", then "-- What it does", then the statement."""

import re
from pathlib import Path

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
# Every loaded statement's text to "file.sql:name", so an error can say which statement it came from.
_NAMES: dict[str, str] = {}


def statement_name(statement: object) -> str | None:
    """The "file.sql:name" of a named query's text (None for SQL that no .sql file names, or composed SQL)."""
    return _NAMES.get(statement) if isinstance(statement, str) else None


class Queries:
    """Attribute access to the named blocks of one .sql file; every block says what it does on its second line.

    A block may be a template whose `{placeholders}` are filled only with `psycopg.sql` identifiers or literals
    (`sql.SQL(q.name).format(...)`); its values still travel as `%(name)s` parameters.
    """

    def __init__(self, path: str | Path):
        text = Path(path).read_text()
        parts = _NAME.split(text)
        self._sql: dict[str, str] = {}
        self.descriptions: dict[str, str] = {}
        for name, body in zip(parts[1::2], parts[2::2]):
            if name in self._sql:
                raise ValueError(f"{path}: query {name!r} defined twice")
            first, _, rest = body.lstrip("\n").partition("\n")
            description = first.strip().removeprefix("--").strip()
            if not first.lstrip().startswith("--") or not description:
                raise ValueError(f"{path}: query {name!r} lacks its one-line description under the name")
            sql = rest.strip().rstrip(";").strip()
            if not sql:
                raise ValueError(f"{path}: query {name!r} is empty")
            self._sql[name] = sql
            _NAMES.setdefault(sql, f"{Path(path).name}:{name}")
            self.descriptions[name] = description

    @classmethod
    def beside(cls, module_file: str, file_name: str = "queries.sql") -> "Queries":
        """The queries file next to a module (call with __file__)."""
        return cls(Path(module_file).with_name(file_name))

    def __getattr__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise AttributeError(f"no query named {name!r}") from None
