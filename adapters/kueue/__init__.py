"""Kueue out: a Pipeline's steps -> Workloads, PodSets and the quota plan. Pure."""
