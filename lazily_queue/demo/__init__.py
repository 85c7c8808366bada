"""Runnable demos behind ``lazily-queue demo``."""
