"""HTTP routers of the gateway, one per resource."""
