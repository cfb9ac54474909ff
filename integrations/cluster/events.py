"""Events sent from a thread of their own, so a reconcile never waits on one.

Like client-go's event broadcaster (``tools/record``), an Event is fire-and-forget: a
reconcile puts it in a bounded queue and goes on; one thread POSTs them in order. A
failed POST is logged and dropped (an Event is a note for people, never state the
controller reads back), and so is any other exception from one Event (the thread goes on); when
the queue is full the newest Event is dropped and counted.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from trainweave.integrations.views.requests import api

Json = dict[str, Any]
log = logging.getLogger("trainweave.events")
PENDING_MAX = 10000  # Events waiting to be sent; more are dropped


def is_event(req: api.Request) -> bool:
    """A POST of a core/v1 Event."""
    return req.method == "POST" and req.path.endswith("/" + api.EVENT.plural)


class EventSender:
    """Sends queued Event requests through ``send`` on one daemon thread."""

    def __init__(
        self,
        send: api.Send,
        on_drop: Callable[[], None] = lambda: None,
        pending_max: int = PENDING_MAX,
    ) -> None:
        self.send, self.on_drop = send, on_drop
        self.pending: queue.Queue[api.Request | None] = queue.Queue(pending_max)
        self.thread = threading.Thread(target=self._loop, name="events", daemon=True)
        self.thread.start()

    def put(self, req: api.Request) -> Json:
        """Queue one Event; returns at once with an empty answer."""
        try:
            self.pending.put_nowait(req)
        except queue.Full:
            self.on_drop()
            log.warning("event dropped, %d waiting: %s", self.pending.qsize(), req.path)
        return {}

    def _loop(self) -> None:
        while (req := self.pending.get()) is not None:
            try:
                self.send(req)
            except api.ApiError as err:
                log.warning("event: %s", err)
            except Exception:  # never the sender's end: an Event is a note, the next may go
                log.exception("event %s", req.path)
            finally:
                self.pending.task_done()
        self.pending.task_done()

    def close(self, timeout: float) -> None:
        """Send what is queued, waiting at most ``timeout`` seconds, then end the thread."""
        try:
            self.pending.put(None, timeout=timeout)
        except queue.Full:
            return
        self.thread.join(timeout)
