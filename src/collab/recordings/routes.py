"""HTTP routes of recordings."""

from fastapi import APIRouter

from collab.kit.envelope import StrictJsonRoute

router = APIRouter(tags=["recordings"], route_class=StrictJsonRoute)
