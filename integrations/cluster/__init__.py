"""Everything that talks to the API server: client, caches, leader election, the controller."""
