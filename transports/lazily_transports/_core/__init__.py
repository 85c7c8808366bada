"""Internals of the transport layer; nothing here is public API and names may change."""
