"""Web framework integrations (optional extras): ``fastapi`` and ``aiohttp``.

Import the submodule you use; each imports its framework on import and says which
extra to install when it is missing.
"""
