"""trainweave: render TrainJobs to Argo + Kueue, plan their admission, run the controller.

The CLI is the I/O edge: it reads files (``-`` is standard input), calls the pure adapters,
prints manifests to stdout and problems to stderr as ``error: FILE: FIELD.PATH: reason``.
Exit codes: 0 ok, 1 a plan that can never fit, 2 invalid input, 141 (128 + SIGPIPE) when
the reader of stdout went away (``trainweave render | head``), quietly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainweave import files, yamlout
from trainweave.errors import InputError, InputErrors
from trainweave.model import Pipeline
from trainweave.trainer_status import ServerRef

_RUNTIME_PATHS = ("spec.template", "spec.mlPolicy", "spec.podGroupPolicy", "replicatedJob")
_CLI = "(command line)"
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool killed by it


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trainweave`` command."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows here, not at exit
    except BrokenPipeError:
        # The Python docs' recipe (library/signal, "Note on SIGPIPE"): point stdout at devnull
        # so the interpreter's own flush at exit does not raise again.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass  # stdout is no file (tests): nothing left to flush
        return EXIT_BROKEN_PIPE
    return code


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except InputErrors as exc:
        for error in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        return 2


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked (the
    lookup scans every installed distribution: ~70 ms that ``render`` should not pay)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("trainweave")
        except PackageNotFoundError:  # a source tree that was never installed
            text = "unknown"
        print(f"{parser.prog} {text}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainweave", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="print the manifests a TrainJob becomes")
    _inputs(render)
    output(render, ("yaml", "json"), "the manifests as multi-document YAML or a JSON v1 List")
    render.add_argument("--attempt", type=int, default=0, help="whole-pipeline attempt (default 0)")
    render.add_argument(
        "--no-exit-cleanup",
        action="store_true",
        help="omit the exit handler that releases a failed run's Kueue Workloads",
    )
    render.add_argument(
        "--controller",
        action="store_true",
        help="what `trainweave controller` creates: no exit handler, and every failed pod"
        " judged by the controller (no retry expressions; disruptions never count)",
    )
    render.add_argument("--service-account", help="the Workflow's service account")
    render.add_argument(
        "--kept-position",
        action="store_true",
        help="with the gated Workloads of the later steps that `trainweave controller"
        " --kept-position` creates at the start (their queue position kept; docs/admins.md)",
    )
    render.add_argument(
        "--trainjob-status-url",
        metavar="URL",
        help="with --trainjob-status-ca: what `trainweave controller --trainjob-status` adds"
        " (Trainer's TrainJobStatus env, token and CA volume, the <name>-tls-config ConfigMap)",
    )
    render.add_argument(
        "--trainjob-status-ca", metavar="CA.crt", help="the status server's CA certificate (PEM)"
    )
    render.add_argument(
        "--dry-run",
        choices=("none", "client", "server"),
        default="none",
        help="server: send every object to the API server of the current kubeconfig with"
        " dryRun=All first (validation, admission, webhooks; nothing stored) and print only"
        " if it accepts them all; none or client (default): offline",
    )
    render.add_argument("--kubeconfig", help="with --dry-run=server (default $KUBECONFIG)")
    render.set_defaults(handler=_render)
    plan = sub.add_parser("plan", help="preview the Kueue Workloads and whether each step fits")
    _inputs(plan)
    plan.add_argument(
        "--queues",
        action="append",
        required=True,
        metavar="QUEUES.yaml",
        help="Kueue ResourceFlavors, ClusterQueues, LocalQueues, Topologies; v1 Nodes (repeatable; - reads stdin)",
    )
    plan.add_argument(
        "--duration",
        action="append",
        default=[],
        metavar="STEP=HOURS",
        help="expected run time of a step, for the idle GPU-hours comparison (repeatable)",
    )
    output(plan, ("table", "yaml", "json"), "the fit table, or the Workload previews")
    plan.set_defaults(handler=_plan)
    try:
        from trainweave.integrations.commands.wiring import add_commands
    except ImportError:  # the controller package is optional at this layer
        pass
    else:
        add_commands(sub, output)
    return parser


def output(parser: argparse.ArgumentParser, choices: tuple[str, ...], what: str) -> None:
    """``-o/--output``: every command takes the formats it can print among table|yaml|json."""
    parser.add_argument(
        "-o", "--output", choices=choices, default=choices[0], help=f"{what} (default {choices[0]})"
    )


def _inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trainjob", metavar="TRAINJOB.yaml", help="the TrainJob (- reads stdin)")
    parser.add_argument(
        "--runtime",
        action="append",
        required=True,
        metavar="RUNTIME.yaml",
        help="TrainingRuntimes / ClusterTrainingRuntimes (repeatable; - reads stdin)",
    )
    parser.add_argument("--default-queue", help="queue for steps whose runtime job names none")


def _stdin_once(args: argparse.Namespace) -> None:
    """``-`` (standard input) may stand for one file only."""
    given = [("TRAINJOB", args.trainjob)]
    given += [("--runtime", f) for f in args.runtime]
    given += [("--queues", f) for f in getattr(args, "queues", None) or []]
    dashes = [name for name, f in given if f == files.STDIN]
    if len(dashes) > 1:
        raise InputErrors(
            [
                InputError(
                    "-",
                    f"standard input can be read once, given for {', '.join(dashes)}",
                    _CLI,
                )
            ]
        )


def _inputs_of(args: argparse.Namespace) -> files.Inputs:
    _stdin_once(args)
    return files.load(args.trainjob, args.runtime)


def _blame(exc: InputErrors, inputs: files.Inputs) -> InputErrors:
    """Each error of the translation or render, attributed to the file it came from."""
    return InputErrors(
        e.at(inputs.runtime_source if e.path.startswith(_RUNTIME_PATHS) else inputs.trainjob_source)
        for e in exc.errors
    )


def _render(args: argparse.Namespace) -> int:
    from trainweave import sshkeys
    from trainweave.adapters import render

    if args.attempt < 0:
        raise InputErrors([InputError("--attempt", f"must be 0 or more, got {args.attempt}", _CLI)])
    inputs = _inputs_of(args)
    options = render.Options(
        attempt=args.attempt,
        default_queue=args.default_queue,
        exit_cleanup=not (args.no_exit_cleanup or args.controller),
        service_account=args.service_account,
        controller=args.controller,
        kept_position=args.kept_position,
        trainer_status=_trainjob_status(args.trainjob_status_url, args.trainjob_status_ca),
    )
    options = render.with_ssh_keys(options, inputs.runtime, sshkeys.generate)  # as the controller
    try:
        manifests = render.render(inputs.trainjob, inputs.runtime, options)
    except InputErrors as exc:
        raise _blame(exc, inputs) from None
    shared = [] if args.controller else _shared_backoff_limits(inputs, manifests)
    if shared:  # applied alone (without the controller), Argo cannot keep a shared budget
        print(
            f"note: backoffLimit of {', '.join(shared)} is shared by all its pods; only the"
            " trainweave controller keeps that budget (applied alone, Argo gives each pod the"
            " whole budget)",
            file=sys.stderr,
        )
    if args.dry_run == "server":
        from trainweave.integrations.commands import dry_run

        code = dry_run.check(manifests, args.kubeconfig or os.environ.get("KUBECONFIG"))
        if code:
            return code
    _emit(manifests, args.output)
    return 0


def _trainjob_status(url: str | None, ca: str | None) -> ServerRef | None:
    """``render --trainjob-status-url URL --trainjob-status-ca FILE``: the server the pods get."""
    if url is None and ca is None:
        return None
    if url is None or ca is None:
        missing = "--trainjob-status-url" if url is None else "--trainjob-status-ca"
        other = "--trainjob-status-ca" if url is None else "--trainjob-status-url"
        raise InputErrors([InputError(missing, f"must be given with {other}", _CLI)])
    if not url.startswith("https://") or len(url) == len("https://"):
        why = f"must be an https:// URL (the pods verify the server with the CA), got {url!r}"
        raise InputErrors([InputError("--trainjob-status-url", why, _CLI)])
    try:
        text = Path(ca).read_text()
    except OSError as exc:
        raise InputErrors([InputError("(file)", exc.strerror or str(exc), ca or "''")]) from None
    except UnicodeDecodeError:
        raise InputErrors([InputError("(file)", "is not UTF-8 text", ca)]) from None
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise InputErrors([InputError("(file)", "is not a PEM certificate", ca)])
    return ServerRef(url, text)


def _shared_backoff_limits(inputs: files.Inputs, manifests: list[dict[str, Any]]) -> list[str]:
    """Jobs whose runtime sets a ``backoffLimit`` that the Workflow records as shared by pods."""
    from trainweave import codecs, labels

    set_by_runtime = {
        rj.name
        for rj in inputs.runtime.spec.template.spec.replicated_jobs
        if (rj.template.get("spec") or {}).get("backoffLimit") is not None
    }
    workflow = next(m for m in manifests if m["kind"] == "Workflow")
    text = workflow["metadata"].get("annotations", {}).get(labels.BACKOFF_LIMITS_ANNOTATION)
    return [
        job
        for jobs in codecs.decode_backoff_limits(text).values()
        for job, policy in jobs.items()
        if policy.shared and job in set_by_runtime
    ]


def _translate(inputs: files.Inputs, default_queue: str | None) -> Pipeline:
    from trainweave.adapters.trainjob.trainer import to_pipeline

    try:
        return to_pipeline(inputs.trainjob, inputs.runtime, default_queue=default_queue)
    except InputErrors as exc:
        raise _blame(exc, inputs) from None


def _plan(args: argparse.Namespace) -> int:
    from trainweave.adapters.kueue import plan_format, workloads
    from trainweave.queues import parse_queues, v1beta1_note

    durations = _durations(args.duration)
    inputs = _inputs_of(args)
    docs = [d for f in args.queues for d in files.documents(f)]
    queues = parse_queues(docs)
    note = v1beta1_note(docs)
    if note:
        print(note, file=sys.stderr)
    pipeline = _translate(inputs, args.default_queue)
    _known_steps(args.duration, pipeline)
    result = workloads.plan(pipeline, queues, durations or None)
    sources = ", ".join(files.STDIN_NAME if f == files.STDIN else f for f in args.queues)
    missing = plan_format.missing_errors(result, sources)
    if missing:
        raise InputErrors(missing)
    if args.output == "table":
        print(workloads.format_plan(result))
    else:
        _emit(workloads.workloads(pipeline), args.output)
    return int(workloads.plan_exit_code(result))


def _durations(pairs: Sequence[str]) -> dict[str, float]:
    """``--duration STEP=HOURS`` pairs: HOURS finite and not negative, each STEP once."""
    out: dict[str, float] = {}
    errors: list[InputError] = []
    for pair in pairs:
        step, eq, text = pair.partition("=")
        try:
            hours = float(text)
        except ValueError:
            hours = math.nan
        if not (eq and step and text):
            errors.append(_duration_error(pair, "must be STEP=HOURS (e.g. node=6)"))
        elif not math.isfinite(hours) or hours < 0:
            errors.append(_duration_error(pair, "HOURS must be a finite number, 0 or more"))
        elif step in out:
            errors.append(_duration_error(pair, f"step {step!r} is given twice"))
        else:
            out[step] = hours
    if errors:
        raise InputErrors(errors)
    return out


def _known_steps(pairs: Sequence[str], pipeline: Pipeline) -> None:
    steps = [s.name for s in pipeline.steps]
    unknown = [p for p in pairs if p.partition("=")[0] not in steps]
    if unknown:
        raise InputErrors(
            _duration_error(p, f"names no step; the steps are {', '.join(steps)}") for p in unknown
        )


def _duration_error(pair: str, why: str) -> InputError:
    return InputError("--duration", f"{pair!r}: {why}", _CLI)


def _emit(manifests: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": manifests}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(yamlout.dump_all(manifests))


if __name__ == "__main__":
    sys.exit(main())
