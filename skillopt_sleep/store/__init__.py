"""Store: what the engine keeps across nights, one module a store."""
