"""Build-time helpers (not part of the installed package)."""
