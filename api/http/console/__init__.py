"""The web console for the people who govern: served by the gateway at `/console` (README, "The console")."""

from api.http.console import review
from api.http.console.pages import STATIC_DIR
from api.http.console.routes import router

router.include_router(review.router)

__all__ = ["router", "STATIC_DIR"]
