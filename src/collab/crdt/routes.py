"""HTTP routes of crdt."""

from fastapi import APIRouter

from collab.kit.envelope import StrictJsonRoute

router = APIRouter(tags=["crdt"], route_class=StrictJsonRoute)
