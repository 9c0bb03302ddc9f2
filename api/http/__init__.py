"""The HTTP gateway: a FastAPI app per process whose routes are thin adapters over api/services/."""
