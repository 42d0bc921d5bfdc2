"""HTTP routes of presence."""

from fastapi import APIRouter

from collab.kit.envelope import StrictJsonRoute

router = APIRouter(tags=["presence"], route_class=StrictJsonRoute)
