"""Shared by the ported Kubeflow Trainer plugin tables (``test_policies_upstream*.py``): the
expected-error record, how a case's TrainJob and runtime become a policy ``Context``, and the
comparison of trainweave's field errors with upstream's."""

from __future__ import annotations

from typing import Any, NamedTuple

from tests.builders import RuntimeBuilder
from trainweave.adapters.trainjob.policies.base import Context
from trainweave.errors import InputError
from trainweave.inputs import TrainJob, parse_runtime, parse_trainjob

Json = dict[str, Any]
CTR = "ClusterTrainingRuntime"


class Err(NamedTuple):
    """An expected field error; ``exact=False``: path prefix and message substring."""

    path: str
    message: str
    exact: bool = True


def _trainjob(doc: Json) -> TrainJob:
    """A parsed TrainJob; names that are not DNS labels (upstream's ``trainJob``) skip
    parse_trainjob's metadata.name check, as Go's plugin tests skip the webhook."""
    name = doc["metadata"]["name"]
    if name != name.lower():
        return TrainJob.model_validate(doc)
    return parse_trainjob(doc)


def context(tj: Json, rt: RuntimeBuilder) -> Context:
    """The policy context of a TrainJob document on the runtime ``rt`` builds."""
    return Context(_trainjob(tj), parse_runtime(rt.build()).spec)


def check_errors(got: list[InputError], want: list[Err]) -> None:
    """``got`` is ``want`` in order; an inexact ``Err`` matches by path prefix and message
    substring."""

    def view(g: InputError, w: Err) -> tuple[str, str]:
        if w.exact:
            return g.path, g.message
        return (
            w.path if g.path.startswith(w.path) else g.path,
            w.message if w.message in g.message else g.message,
        )

    views = [view(g, w) for g, w in zip(got, want, strict=False)]
    views += [(g.path, g.message) for g in got[len(want) :]]
    assert views == [(w.path, w.message) for w in want]
