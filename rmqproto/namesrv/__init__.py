"""The NameServer: route registry, KV config and the request processor (Java ``RouteInfoManager``)."""
