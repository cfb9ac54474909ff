"""``trainweave status NAME --timeline-png FILE``: a ``timeline.Timeline`` drawn as the admission
benchmark draws its GPU timelines (``benchmarks/admission.py plot``: one horizontal bar per row,
light for GPUs reserved, dark for running), plus the waits in grey and the holds waiting for
capacity in red. matplotlib is optional
(``pip install matplotlib``, not a dependency): imported only here, only when asked.
"""

from __future__ import annotations

import importlib
import io
from typing import Any

from trainweave.integrations.commands.timeline_format import label
from trainweave.integrations.views.read.timeline import SpanKind, Timeline

COLORS = {
    SpanKind.WAIT: "#bababa",
    SpanKind.CAPACITY: "#d6604d",
    SpanKind.HELD: "#f4a582",
    SpanKind.RUN: "#2166ac",
}
HEIGHTS = {SpanKind.WAIT: 0.3, SpanKind.CAPACITY: 0.8, SpanKind.HELD: 0.8, SpanKind.RUN: 0.4}
DRAWN_AS = {
    SpanKind.WAIT: (),
    SpanKind.CAPACITY: (),
    SpanKind.HELD: (),
    SpanKind.RUN: (SpanKind.HELD,),
}
MISSING = "drawing a PNG needs matplotlib, which is not installed: pip install matplotlib"


class NoMatplotlib(Exception):
    """matplotlib is not installed."""


def png(tl: Timeline) -> bytes:
    """The PNG bytes of the timeline (seconds since ``tl.start`` on the x axis)."""
    try:
        mpl: Any = importlib.import_module("matplotlib")
    except ImportError:
        raise NoMatplotlib(MISSING) from None
    mpl.use("Agg")
    plt: Any = importlib.import_module("matplotlib.pyplot")
    names = [label(r) for r in tl.rows]
    fig, ax = plt.subplots(figsize=(10, 0.4 * len(names) + 1.6))
    try:
        for y, row in enumerate(tl.rows):
            for kind in (SpanKind.WAIT, SpanKind.CAPACITY, SpanKind.HELD, SpanKind.RUN):
                # as the benchmark: the light bar is all the hold, running drawn over it
                for s in (s for s in row.spans if s.kind == kind or kind in DRAWN_AS[s.kind]):
                    left = (s.start - tl.start).total_seconds()
                    ax.barh(y, s.seconds, left=left, height=HEIGHTS[kind], color=COLORS[kind])
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("seconds since the first step was created")
        ax.set_title(
            f"{tl.namespace}/{tl.name} ({tl.state}); grey: waiting for quota, "
            "red: quota held waiting for capacity, light: quota held, dark: running",
            fontsize=9,
        )
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        return buf.getvalue()
    finally:
        plt.close(fig)
