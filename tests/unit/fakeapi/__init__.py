"""One fake Kubernetes API server for the unit tier (``server.FakeApi``), reached in-process
(``transport.Transport``) or over HTTP (``http.Served``); ``engines`` plays Argo and Kueue on it.
"""

from tests.unit.fakeapi.server import FakeApi
from tests.unit.fakeapi.transport import Transport

__all__ = ["FakeApi", "Transport"]
