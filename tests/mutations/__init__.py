"""The planted defects ``tests/mutate.py`` runs, one module per part of the code."""

from __future__ import annotations

from . import cells, clients, edges, give_backs, node, raft, replicated, storage
from .mutation import Mutation

__all__ = ["MUTATIONS", "Mutation"]

MUTATIONS: list[Mutation] = [
    *raft.MUTATIONS, *replicated.MUTATIONS, *clients.MUTATIONS, *cells.MUTATIONS,
    *storage.MUTATIONS, *edges.MUTATIONS, *node.MUTATIONS, *give_backs.MUTATIONS,
]
