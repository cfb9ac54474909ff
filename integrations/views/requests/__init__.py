"""The requests a decision sends, as values: Kubernetes API calls (``api``) and Events
(``event``). Pure; sent by ``integrations.cluster``."""
