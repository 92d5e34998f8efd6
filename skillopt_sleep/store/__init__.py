"""Store: what the engine keeps across nights, one module a store (the session-start notice files too)."""
