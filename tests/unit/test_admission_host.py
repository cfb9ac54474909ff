"""benchmarks/admission_host.py: the API server's write counter by resource, and CPU seconds from
/proc."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.admission_host import cpu_seconds, own_cpu, writes_by_resource

METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="status",verb="APPLY",version="v1beta2"} 7.0
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="PATCH",version="v1"} 2
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="POST"} 500
"""


def test_writes_are_summed_by_resource_subresource_and_verb_reads_left_out() -> None:
    assert writes_by_resource(METRICS) == {
        "pods POST": 15.0,
        "workloads/status APPLY": 7.0,
        "events PATCH": 2.0,
    }


def test_cpu_seconds_of_a_finished_child_is_zero_and_own_cpu_grows() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cpu_seconds(child.pid) == 0.0  # reaped: no /proc entry
    before = own_cpu()
    sum(i * i for i in range(2_000_000))
    assert own_cpu() > before
    assert cpu_seconds(os.getpid()) > 0.0
