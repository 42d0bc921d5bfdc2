"""HTTP routes of notifications."""

from fastapi import APIRouter

from collab.kit.envelope import StrictJsonRoute

router = APIRouter(tags=["notifications"], route_class=StrictJsonRoute)
