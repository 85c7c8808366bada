"""Deterministic simulation of a lazily-queue cluster with fault injection.

N members of the real code (replica, engine, state machine, journal, snapshots) run in
one process on a virtual clock, a simulated disk and a simulated network, all driven
by one seed. See ``python -m simulator --help``.
"""
