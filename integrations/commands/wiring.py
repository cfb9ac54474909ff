"""CLI wiring of the cluster commands: ``trainweave controller``, ``status`` and ``queues``.

``add_commands(subparsers)`` registers them; handlers import the controller
modules (kubernetes, prometheus-client) only when run, so ``trainweave render``
starts fast.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from trainweave.adapters.argo.controller_config import DEFAULT_CONFIG_MAP
from trainweave.errors import InputError, InputErrors
from trainweave.k8s_names import DNS1123_SUBDOMAIN_FMT, is_dns1123_label, is_dns1123_subdomain

# a namespace or ClusterQueue name: an RFC 1123 label / subdomain (apimachinery validation)
_NAME = re.compile(DNS1123_SUBDOMAIN_FMT)


PIP = "pip install matplotlib"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def address(value: str) -> str:
    """An argparse type: ``HOST:PORT`` (``127.0.0.1:8080``, ``:8080``, ``[::1]:8080``), the port
    0..65535 (0: any free port). A bad one is argparse's one usage line, exit 2."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535 or " " in host:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not HOST:PORT with a port 0-65535 (e.g. 127.0.0.1:8080, :8080,"
            " [::1]:8080)"
        )
    return value


def positive(value: str) -> int:
    """An argparse type: a whole number of 1 or more."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of 1 or more")
    return number


ARGO_CONFIG_MAP = DEFAULT_CONFIG_MAP  # Argo's install default


def config_map_ref(value: str) -> str:
    """An argparse type: ``NAMESPACE/NAME`` of a ConfigMap (a DNS-1123 label, a DNS-1123
    subdomain), or "" (none). A bad one is argparse's one usage line, exit 2."""
    namespace, sep, name = value.partition("/")
    if value and not (sep and is_dns1123_label(namespace) and is_dns1123_subdomain(name)):
        raise argparse.ArgumentTypeError(
            f'{value!r} is not NAMESPACE/NAME of a ConfigMap (e.g. {ARGO_CONFIG_MAP}), or ""'
            " to not read one"
        )
    return value


OutputOption = Callable[[argparse.ArgumentParser, tuple[str, ...], str], None]


def add_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], output: OutputOption
) -> None:
    """Register ``controller``, ``status`` and ``queues`` on the CLI's subparsers.

    ``output(parser, choices, what)`` adds the CLI's one ``-o/--output`` option.
    """
    ctl = subparsers.add_parser(
        "controller",
        help="run the reconciler: TrainJobs -> Argo Workflows + Kueue, status back",
        description="Watch TrainJobs and run them as Argo Workflows with per-step Kueue "
        "admission; roll Workflow, pod and Workload state back into TrainJob status.",
    )
    ctl.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ctl.add_argument("--namespace", default="", help="watch one namespace (default: all)")
    ctl.add_argument(
        "--bind",
        type=address,
        default="127.0.0.1:8080",
        help="address of /healthz, /readyz, /metrics (default: loopback 127.0.0.1:8080)",
    )
    ctl.add_argument("--workers", type=positive, default=2, help="reconcile workers (default 2)")
    ctl.add_argument("--default-queue", default=None, help="LocalQueue for steps without one")
    ctl.add_argument("--no-leader-elect", action="store_true", help="act without a Lease")
    ctl.add_argument(
        "--lease-namespace", default=os.environ.get("POD_NAMESPACE", "trainweave-system")
    )
    ctl.add_argument("--lease-name", default="trainweave-controller")
    ctl.add_argument("--identity", default=None, help="leader election identity (default host-pid)")
    ctl.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default="INFO",
        help="DEBUG, INFO (default), WARNING, ERROR or CRITICAL",
    )
    ctl.add_argument(
        "--kept-position",
        action="store_true",
        help="create later steps' Workloads gated at the start, so each step queues as of its"
        " TrainJob's start (off by default; a ClusterQueue annotated"
        " trainweave.io/kept-position=false opts out; docs/admins.md)",
    )
    ctl.add_argument(
        "--kept-position-cap",
        type=int,
        default=7200,
        metavar="SECONDS",
        help="give a kept position up after this long (default 7200: 2 h)",
    )
    ctl.add_argument(
        "--no-judge-first",
        action="store_true",
        help="do not have the API server judge each start with dry-run creates first (a step"
        " the cluster refuses then fails only when Argo creates its pod; docs/controller.md)",
    )
    ctl.add_argument(
        "--argo-config-map",
        type=config_map_ref,
        default=ARGO_CONFIG_MAP,
        metavar="NAMESPACE/NAME",
        help="Argo's workflow-controller ConfigMap, read once at start: its executor,"
        " mainContainer, kubeConfig, instanceID and workflowDefaults shape the step pods each"
        f' start is judged with (default {ARGO_CONFIG_MAP}; "": Argo\'s defaults;'
        " docs/controller.md)",
    )
    ctl.add_argument(
        "--settle-ms",
        type=int,
        default=50,
        metavar="MS",
        help="hold a changed TrainJob this long before reconciling it, so the events of one"
        " engine change make one reconcile (default 50; 0: at once)",
    )
    _trainjob_status_flags(ctl)
    ctl.set_defaults(handler=_controller)

    st = subparsers.add_parser(
        "status", help="steps, phases, admission, waits and GPU-hours of a live TrainJob"
    )
    st.add_argument("trainjob")
    st.add_argument("-n", "--namespace", default="default")
    output(st, ("table", "json"), "the status table, or (with --timeline) the timeline's data")
    st.add_argument(
        "--timeline",
        action="store_true",
        help="per step attempt: waiting for quota (queue, Kueue's reason), held, running, "
        "finished, with GPU-seconds held and used, as a text Gantt chart",
    )
    st.add_argument(
        "--timeline-png",
        metavar="FILE",
        default="",
        help="also draw the timeline into FILE as a PNG (needs matplotlib)",
    )
    st.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    st.set_defaults(handler=_status)

    qs = subparsers.add_parser(
        "queues",
        help="per ClusterQueue and namespace: pipelines holding quota, steps waiting (read only)",
        description="The Kueue admin's view: for each ClusterQueue and namespace, the "
        "TrainJobs whose steps hold its quota or wait for it, how long each step waited "
        "and the GPU-hours it has held.",
    )
    qs.add_argument("-n", "--namespace", default="", help="one namespace (default: all)")
    qs.add_argument("--cluster-queue", default="", help="one ClusterQueue (default: all)")
    output(qs, ("table", "yaml", "json"), "the per-ClusterQueue table, or its data")
    qs.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    qs.set_defaults(handler=_queues)


def _controller(args: argparse.Namespace) -> int:
    import logging

    from trainweave.integrations.cluster import controller, process

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.kept_position_cap <= 0:
        raise InputErrors(
            [
                InputError(
                    "--kept-position-cap", "must be a positive number of seconds", "(command line)"
                )
            ]
        )
    if args.settle_ms < 0:
        raise InputErrors(
            [InputError("--settle-ms", "must be 0 or a positive number", "(command line)")]
        )
    fields = {
        "settle": args.settle_ms / 1000,
        "namespace": args.namespace,
        "bind": args.bind,
        "workers": args.workers,
        "default_queue": args.default_queue,
        "leader_elect": not args.no_leader_elect,
        "lease_namespace": args.lease_namespace,
        "lease_name": args.lease_name,
        "kept_position_cap": args.kept_position_cap if args.kept_position else None,
        "judge_first": not args.no_judge_first,
        "argo_config_map": args.argo_config_map,
    }
    if args.identity:
        fields["identity"] = args.identity
    configuration(args.kubeconfig)  # a missing kubeconfig is one line, before any thread starts
    renderer = None
    if args.trainjob_status:
        from trainweave.integrations.cluster import status_server

        ref = status_server.start(
            args.trainjob_status_bind,
            args.trainjob_status_url,
            args.trainjob_status_cert_dir,
            args.kubeconfig,
        )
        renderer = status_server.renderer(ref, args.default_queue)
    return process.run(controller.Config(**fields), kubeconfig=args.kubeconfig, renderer=renderer)


def _trainjob_status_flags(ctl: argparse.ArgumentParser) -> None:
    """Trainer's TrainJobStatus feature (alpha, off by default upstream too): the status server."""
    from trainweave.integrations.cluster import status_server as ss

    ctl.add_argument(
        "--trainjob-status",
        action="store_true",
        help="serve Kubeflow Trainer's TrainJob status endpoint (its TrainJobStatus feature"
        " gate): trainer pods get KUBEFLOW_TRAINER_SERVER_* and may write status.trainerStatus",
    )
    ctl.add_argument(
        "--trainjob-status-bind",
        type=address,
        default=ss.DEFAULT_BIND,
        help="HTTPS address (default :10443)",
    )
    ctl.add_argument(
        "--trainjob-status-url",
        default=ss.DEFAULT_URL,
        help="the server's URL as the pods reach it (default: the trainweave-controller Service)",
    )
    ctl.add_argument(
        "--trainjob-status-cert-dir",
        default=None,
        help="tls.crt, tls.key and ca.crt (a mounted Secret); default: a CA made at start",
    )


def configuration(kubeconfig: str | None) -> Any:
    """The client configuration of ``kubeconfig`` (else ~/.kube/config, else in-cluster).

    None of them usable is an InputError (the CLI prints one line and exits 2), not the
    kubernetes client's traceback.
    """
    import yaml
    from kubernetes.config import ConfigException

    from trainweave.integrations.cluster.kube import load_configuration

    if kubeconfig and not any(
        os.path.exists(os.path.expanduser(p)) for p in kubeconfig.split(os.pathsep)
    ):  # the client skips missing files and then says only "No configuration found"
        raise InputErrors([InputError("(kubeconfig)", "no such file", kubeconfig)])
    try:
        return load_configuration(kubeconfig)
    except (ConfigException, OSError, yaml.YAMLError, TypeError, ValueError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if kubeconfig:
            raise InputErrors([InputError("(kubeconfig)", reason, kubeconfig)]) from None
        raise InputErrors(
            [
                InputError(
                    "(kubeconfig)",
                    "none found (no --kubeconfig, $KUBECONFIG or ~/.kube/config) and not"
                    f" running in a cluster ({reason})",
                )
            ]
        ) from None


def _status(args: argparse.Namespace) -> int:
    import importlib.util

    errors = []
    if args.output == "json" and not args.timeline:
        errors.append(InputError("--output", "json is the timeline's data: add --timeline"))
    if args.timeline_png and importlib.util.find_spec("matplotlib") is None:
        errors.append(
            InputError("--timeline-png", "needs matplotlib, which is not installed: " + PIP)
        )
    if errors:
        raise InputErrors(e.at("(command line)") for e in errors)
    from trainweave.integrations.commands import status_cli

    return status_cli.main(
        args.trainjob,
        args.namespace,
        configuration(args.kubeconfig),
        sys.stdout,
        sys.stderr,
        status_cli.Timeline(
            args.timeline or bool(args.timeline_png), args.output, args.timeline_png
        ),
    )


def _queues(args: argparse.Namespace) -> int:
    errors = [
        InputError(flag, f"{value!r} is not a valid Kubernetes name", "(command line)")
        for flag, value in (
            ("--namespace", args.namespace),
            ("--cluster-queue", args.cluster_queue),
        )
        if value and (len(value) > 253 or not _NAME.fullmatch(value))
    ]
    if errors:
        raise InputErrors(errors)
    from trainweave.integrations.commands import status_cli

    return status_cli.queues_main(
        args.namespace,
        args.cluster_queue,
        args.output,
        configuration(args.kubeconfig),
        sys.stdout,
        sys.stderr,
    )
