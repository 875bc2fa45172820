"""Tools over HTTP: the tool server, its wire format, limits, guard, metrics and the client."""
