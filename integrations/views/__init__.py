"""Cluster objects read as trainweave terms, and the decisions taken on them. Pure."""
