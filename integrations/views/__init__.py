"""Cluster objects read as trainweave terms, and the decisions taken on them. Pure.

The folders are the flow of one reconcile: ``read/`` (what ``observed()`` reads) ->
``decide/`` (what ``reconcile.actions`` decides) -> ``requests/`` (the requests it sends);
import-linter keeps that order (pyproject.toml).
"""
