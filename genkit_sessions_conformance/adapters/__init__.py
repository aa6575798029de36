"""Adapters that put other session stores behind this package's store protocol, so the suite can run them."""
