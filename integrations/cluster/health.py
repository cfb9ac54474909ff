"""Which of the controller's threads still run: what ``/healthz`` answers.

Every long-lived thread of the controller (the informers, the workers, the Event sender, the
lease renewal) is watched. One that ends before the controller stops, or ends on an exception
(``threading.excepthook``, installed by ``install``), is named by ``problems()``: ``/healthz``
then answers 500 and kubelet restarts the pod (deploy/deployment.yaml's livenessProbe), which
lists everything afresh. A thread is not restarted in process: what ended it escaped every
per-object guard (``informer.Informer.on_error``, ``Controller.worker``), so it is a bug to
surface, not a state to paper over. Whether the informers keep up is ``/readyz``'s question
(``informer.Informer.stale_for``), not this one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("trainweave.controller")


class Health:
    """The watched threads and the ones that died."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: dict[str, threading.Thread] = {}
        self.died: dict[str, str] = {}  # thread name -> the exception that ended it
        self.stopping = threading.Event()  # set on a clean stop: threads end on purpose

    def watch(self, thread: threading.Thread) -> threading.Thread:
        """Watch a started thread; it must run until ``stopping``."""
        with self.lock:
            self.threads[thread.name] = thread
        return thread

    def excepthook(self, args: threading.ExceptHookArgs) -> None:
        """Record a thread that ended on an exception (any thread, watched or not)."""
        name = args.thread.name if args.thread is not None else "?"
        with self.lock:
            self.died[name] = f"{args.exc_type.__name__}: {args.exc_value}"
        log.critical("thread %s died: %s: %s", name, args.exc_type.__name__, args.exc_value)

    def install(self) -> Callable[[], None]:
        """Route uncaught thread exceptions here (then to the previous hook); returns the undo."""
        previous = threading.excepthook

        def hook(args: threading.ExceptHookArgs) -> None:
            self.excepthook(args)
            previous(args)

        threading.excepthook = hook

        def undo() -> None:
            threading.excepthook = previous

        return undo

    def problems(self) -> list[str]:
        """``name: why`` of each watched thread that ended, or any thread that died; none once
        stopping."""
        if self.stopping.is_set():
            return []
        with self.lock:
            out = [f"{name}: {why}" for name, why in sorted(self.died.items())]
            out += [
                f"{name}: stopped"
                for name, t in sorted(self.threads.items())
                if not t.is_alive() and name not in self.died
            ]
        return out
