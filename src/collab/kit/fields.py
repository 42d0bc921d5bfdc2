"""Field types shared by request models: identifiers, id lists without duplicates, batch caps."""

from typing import Annotated, Any, Iterable, TypeVar

from pydantic import AfterValidator, Field

# Our own cap for batch arrays the spec leaves open (docs/reference.md, "Organizations, folders and documents").
MAX_BATCH = 1000

T = TypeVar("T")

Id = Annotated[str, Field(min_length=1, max_length=200)]
Name = Annotated[str, Field(max_length=500)]


def distinct(values: Iterable[Any], what: str = "id") -> None:
    """Refuse a batch that names the same item twice (its results are keyed by id)."""
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"Duplicate {what}: {value}")
        seen.add(value)


def distinct_ids(values: list[str]) -> list[str]:
    """An AfterValidator: the list, when no id repeats in it."""
    distinct(values)
    return values


# A non-empty list of distinct ids, at most MAX_BATCH long (or the lower cap the spec names for the field).
IdList = Annotated[list[Id], Field(min_length=1, max_length=MAX_BATCH), AfterValidator(distinct_ids)]
IdList100 = Annotated[list[Id], Field(min_length=1, max_length=100), AfterValidator(distinct_ids)]
IdList30 = Annotated[list[Id], Field(min_length=1, max_length=30), AfterValidator(distinct_ids)]


def unique_by(key: str) -> AfterValidator:
    """A batch validator refusing two items with the same `key` field."""

    def check(items: list[T]) -> list[T]:
        distinct((getattr(item, key) for item in items), key)
        return items

    return AfterValidator(check)
