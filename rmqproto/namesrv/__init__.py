"""The NameServer: route registry, KV config and the request processor (reference §2.2)."""
