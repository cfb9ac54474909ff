"""trainweave: render TrainJobs to Argo + Kueue, plan their admission, run the controller.

The CLI is the I/O edge: it reads files, calls the pure adapters, prints
manifests to stdout and problems to stderr as ``error: FILE: FIELD.PATH: reason``.
Exit codes: 0 ok, 1 a plan that can never fit, 2 invalid input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from trainweave import yamlout
from trainweave.errors import InputError, InputErrors
from trainweave.files import Document, documents
from trainweave.inputs import Runtime, TrainJob, parse_runtime, parse_trainjob

_RUNTIME_PATHS = ("spec.template", "spec.mlPolicy", "spec.podGroupPolicy", "replicatedJob")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trainweave`` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except InputErrors as exc:
        for error in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainweave", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="print the manifests a TrainJob becomes")
    _inputs(render)
    render.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    render.add_argument("--attempt", type=int, default=0, help="whole-pipeline attempt (default 0)")
    render.add_argument(
        "--no-exit-cleanup",
        action="store_true",
        help="omit the exit handler that releases a failed run's Kueue Workloads",
    )
    render.add_argument("--service-account", help="the Workflow's service account")
    render.set_defaults(handler=_render)
    plan = sub.add_parser("plan", help="preview the Kueue Workloads and whether each step fits")
    _inputs(plan)
    plan.add_argument("--queues", action="append", required=True, metavar="QUEUES.yaml")
    plan.add_argument(
        "--duration",
        action="append",
        default=[],
        metavar="STEP=HOURS",
        help="expected run time of a step, for the idle GPU-hours comparison",
    )
    plan.add_argument("-o", "--output", choices=("table", "yaml"), default="table")
    plan.set_defaults(handler=_plan)
    try:
        from trainweave.integrations.commands.wiring import add_commands
    except ImportError:  # the controller package is optional at this layer
        pass
    else:
        add_commands(sub)
    return parser


def _inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trainjob", metavar="TRAINJOB.yaml")
    parser.add_argument("--runtime", action="append", required=True, metavar="RUNTIME.yaml")
    parser.add_argument("--default-queue", help="queue for steps whose runtime job names none")


def load(trainjob_file: str, runtime_files: Sequence[str]) -> tuple[TrainJob, Runtime]:
    """The TrainJob in ``trainjob_file`` and the runtime it refers to among ``runtime_files``."""
    docs = documents(trainjob_file)
    if len(docs) != 1:
        raise InputErrors(
            [
                InputError(
                    "(file)", f"must hold one TrainJob, found {len(docs)} documents", trainjob_file
                )
            ]
        )
    job = parse_trainjob(*docs[0])
    runtimes: list[Document] = [d for f in runtime_files for d in documents(f)]
    errors: list[InputError] = []
    ref = job.spec.runtime_ref
    for doc, source in runtimes:
        if doc.get("kind") == ref.kind and (doc.get("metadata") or {}).get("name") == ref.name:
            return job, parse_runtime(doc, source)
        if doc.get("kind") not in ("TrainingRuntime", "ClusterTrainingRuntime"):
            errors.append(
                InputError(
                    "kind",
                    f"expected a TrainingRuntime or ClusterTrainingRuntime, got {doc.get('kind')!r}",
                    source,
                )
            )
    errors.append(
        InputError(
            "spec.runtimeRef",
            f"no {ref.kind} named {ref.name!r} in {', '.join(runtime_files)}",
            trainjob_file,
        )
    )
    raise InputErrors(errors)


def pipeline_of(args: argparse.Namespace) -> Any:
    """Load the inputs and translate them, attributing errors to their files."""
    from trainweave.adapters.trainjob.trainer import to_pipeline

    job, runtime = load(args.trainjob, args.runtime)
    runtime_file = next(
        f
        for f in args.runtime
        for d, _ in documents(f)
        if d.get("kind") == runtime.kind
        and (d.get("metadata") or {}).get("name") == runtime.metadata.name
    )
    try:
        return to_pipeline(
            job, runtime, attempt=getattr(args, "attempt", 0), default_queue=args.default_queue
        )
    except InputErrors as exc:
        raise InputErrors(
            e.at(runtime_file if e.path.startswith(_RUNTIME_PATHS) else args.trainjob)
            for e in exc.errors
        ) from None


def _render(args: argparse.Namespace) -> int:
    from trainweave.adapters import render

    pipeline = pipeline_of(args)
    keys = None
    if pipeline.mpi_slots:
        from trainweave import sshkeys

        keys = sshkeys.generate()
    options = render.Options(
        attempt=pipeline.attempt,
        exit_cleanup=not args.no_exit_cleanup,
        service_account=args.service_account,
        ssh_keys=keys,
    )
    try:
        manifests = render.objects_of(pipeline, options)
    except InputErrors as exc:
        raise exc.at(args.runtime[0]) from None
    shared = [j.name for st in pipeline.steps for j in st.jobs if j.retry.shared]
    if shared:
        print(
            f"note: backoffLimit of {', '.join(shared)} is shared by all its pods; only the"
            " trainweave controller keeps that budget (applied alone, Argo gives each pod the"
            " whole budget)",
            file=sys.stderr,
        )
    _emit(manifests, args.output)
    return 0


def _plan(args: argparse.Namespace) -> int:
    from trainweave.adapters.kueue import workloads
    from trainweave.queues import parse_queues

    pipeline = pipeline_of(args)
    queues = parse_queues([d for f in args.queues for d in documents(f)])
    durations = _durations(args.duration)
    result = workloads.plan(pipeline, queues, durations or None)
    if args.output == "yaml":
        _emit(workloads.workloads(pipeline), "yaml")
    else:
        print(workloads.format_plan(result))
    return int(workloads.plan_exit_code(result))


def _durations(pairs: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        step, _, hours = pair.partition("=")
        try:
            out[step] = float(hours)
        except ValueError:
            raise InputErrors(
                [InputError("--duration", f"{pair!r} must be STEP=HOURS", "(command line)")]
            ) from None
    return out


def _emit(manifests: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": manifests}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(yamlout.dump_all(manifests))


if __name__ == "__main__":
    sys.exit(main())
