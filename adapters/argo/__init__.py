"""Argo out: a Pipeline -> the Workflow and the objects beside it. Pure."""
