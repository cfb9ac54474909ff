"""trainweave."""
