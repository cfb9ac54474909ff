"""The cluster-reading CLI commands: ``controller``, ``status``, ``queues``."""
