"""A real Prometheus server for one e2e test: Debian's package (hack/prometheus.sh), a generated
config scraping one loopback target every second, deploy/prometheus-rules.yaml loaded."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from .controller_proc import free_port
from .kube import wait_until

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus-rules.yaml"


def binary() -> str:
    """The prometheus binary, installed by hack/prometheus.sh if needed."""
    out = subprocess.run(
        ["bash", str(ROOT / "hack" / "prometheus.sh")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def rules(extra: list[dict[str, Any]]) -> dict[str, Any]:
    """deploy/prometheus-rules.yaml evaluated every second (the file says 1m), plus ``extra``
    recording rules in a group of their own."""
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        group["interval"] = "1s"
    doc["groups"].append({"name": "e2e", "interval": "1s", "rules": extra})
    return dict(doc)


class Prometheus:
    """``prometheus`` on 127.0.0.1, scraping ``target`` (host:port) every second."""

    def __init__(self, workdir: Path, target: str, extra_rules: list[dict[str, Any]]) -> None:
        self.port = free_port()
        (workdir / "rules.yaml").write_text(yaml.safe_dump(rules(extra_rules)))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(workdir / "rules.yaml")],
            "scrape_configs": [
                {"job_name": "trainweave", "static_configs": [{"targets": [target]}]}
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = workdir / "prometheus.log"
        cmd = [
            binary(),
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.proc = subprocess.Popen(cmd, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        wait_until("prometheus /-/ready", self.ready, timeout=30)
        # targets reach the scrape manager some seconds after /-/ready (discovery batches)
        wait_until(f"first scrape of {target}", lambda: self.query("up"), timeout=30)

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {self.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector of ``promql`` now (``/api/v1/query``): [{metric, value}]."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql}
        )
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return list(doc["data"]["result"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)
