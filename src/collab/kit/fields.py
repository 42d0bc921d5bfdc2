"""Field types shared by request models: identifiers, id lists without duplicates, batch caps."""

from typing import Annotated, Any, Iterable

from pydantic import AfterValidator, Field

# Our own cap for batch arrays the spec leaves open (documented in docs/decisions.md).
MAX_BATCH = 1000

Id = Annotated[str, Field(min_length=1, max_length=200)]
Name = Annotated[str, Field(max_length=500)]


def distinct(values: Iterable[Any], what: str = "id") -> None:
    """Refuse a batch that names the same item twice (its results are keyed by id)."""
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"Duplicate {what}: {value}")
        seen.add(value)


def _distinct(values: list[str]) -> list[str]:
    distinct(values)
    return values


def id_list(max_length: int = MAX_BATCH) -> Any:
    """A non-empty list of distinct ids, at most `max_length` long."""
    return Annotated[list[Id], Field(min_length=1, max_length=max_length), AfterValidator(_distinct)]


def batch(item_type: Any, key: str, max_length: int = MAX_BATCH) -> Any:
    """A non-empty list of up to `max_length` items, no two with the same `key` field."""

    def check(items: list[Any]) -> list[Any]:
        distinct((getattr(item, key) for item in items), key)
        return items

    return Annotated[list[item_type], Field(min_length=1, max_length=max_length), AfterValidator(check)]
