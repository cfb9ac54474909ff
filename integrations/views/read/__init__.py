"""What the cluster shows, read as trainweave terms: typed bodies, a Workflow read once, what one
reconcile sees (``observed``), quota records, the caches' slim objects, the timeline and the
admin's queue view. Pure; imports neither ``decide`` nor ``requests``."""
