"""Requests of Velt's v1 location operations: a document's location renamed or merged, and its data deleted."""

from typing import Any

from pydantic import Field

from collab.comments.schemas import Location
from collab.kit.envelope import Model
from collab.kit.fields import Id
from collab.kit.validation import Broken, rule, rules


def _identified(field: str, *path: str):

    def check(values: dict[str, Any]) -> Broken | None:
        value: Any = values
        for name in (field, *path):
            value = value.get(name) if isinstance(value, dict) else getattr(value, name, None)
        if not isinstance(value, dict) or value.get("id") is None:
            return Broken(field, f"{'.'.join((field, *path))} needs its id (threads are found by their location's id)")
        return None

    return check


class Migration(Model):
    oldLocation: Location
    newLocation: Location

    _rules = rules(rule("oldLocation")(_identified("oldLocation")))


class UpdateLocation(Model):
    organizationId: str = Field(None, min_length=1, max_length=200)  # Velt: optional; the document's only one
    documentId: Id
    migrate: Migration
    merge: bool = False  # true: newLocation's fields over the old ones; false: newLocation replaces it


class DeleteLocationData(Model):
    organizationId: str = Field(None, min_length=1, max_length=200)
    documentId: Id
    location: Location

    _rules = rules(rule("location")(_identified("location")))
