"""Render benchmark: ``trainweave render`` of examples/llm-finetune, in-process and as a process.

Prints (one core, best of a few repeats, with the load average at each step):

- renders/s of translate+render (``to_pipeline`` + ``workflow.render``, inputs parsed once) and
  of serialisation (``trainweave.yamlout`` as the CLI does; ``json.dumps`` for reference),
  and how many ``json.dumps`` of the same manifests one full render costs;
- KFP's compiler (``kfp==2.17.3``) on an equivalent 3-step pipeline (initializer -> trainer
  with a GPU request -> exporter), measured in its own venv under
  ``${XDG_CACHE_HOME:-~/.cache}/trainweave/bench-venv`` (created on first run; needs PyPI);
- wall time of the ``trainweave render`` process and of ``python -c 'import hera.workflows'``
  (median of several runs).

Run: ``.venv/bin/python benchmarks/render.py`` (``--no-kfp`` to skip KFP, ``--quick``;
Targets: >= 500 renders/s, >= 10x KFP's compiles/s, ``trainweave render`` < 1.5 s wall.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llm-finetune"
TRAINJOB, RUNTIME = EXAMPLE / "trainjob.yaml", EXAMPLE / "runtime.yaml"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave"
BENCH_VENV = CACHE / "bench-venv"
KFP = "kfp==2.17.3"

KFP_REQUIRES = (
    "from importlib import metadata\n"
    "for r in metadata.requires('kfp'):\n"
    "    if 'extra ==' not in r: print('certifi' if r.startswith('certifi') else r)"
)
KFP_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, tempfile, time
    from importlib import metadata
    os.sched_setaffinity(0, {int(sys.argv[1])})
    seconds, repeats = float(sys.argv[2]), int(sys.argv[3])
    from kfp import compiler, dsl

    @dsl.container_component
    def initializer():
        return dsl.ContainerSpec(image="ghcr.io/kubeflow/trainer/model-initializer:v2.3.0",
                                 command=["python", "-m", "initializer"],
                                 args=["--storage-uri", "hf://meta-llama/Llama-3.2-1B-Instruct"])

    @dsl.container_component
    def trainer():
        return dsl.ContainerSpec(image="pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
                                 command=["torchrun", "/workspace/recipes/finetune.py"],
                                 args=["--epochs", "3", "--lora-rank", "16"])

    @dsl.container_component
    def exporter():
        return dsl.ContainerSpec(image="ghcr.io/example/model-exporter:1.4",
                                 command=["python", "-m", "exporter", "--merge-lora"])

    @dsl.pipeline(name="llm-finetune")
    def pipeline():
        init = initializer().set_cpu_request("4").set_memory_request("16Gi")
        train = trainer().after(init)
        train.set_cpu_request("32").set_memory_request("256Gi")
        train.set_accelerator_type("nvidia.com/gpu").set_accelerator_limit(8)
        exporter().after(train).set_cpu_request("8").set_memory_request("64Gi")

    out = os.path.join(tempfile.mkdtemp(), "pipeline.yaml")
    comp = compiler.Compiler()
    comp.compile(pipeline, out)
    best = 0.0
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            comp.compile(pipeline, out)
            n += 1
        best = max(best, n / (time.perf_counter() - start))
    print(json.dumps({"compiles_per_s": best, "kfp": metadata.version("kfp"),
                      "python": sys.version.split()[0]}))
    """
)


def hera_three_steps() -> None:
    """Hera alone: build and serialise a 3-step initializer -> trainer -> exporter DAG (reference)."""
    from hera.workflows import DAG, Container, Resources, Task, Workflow

    with Workflow(name="ref", namespace="ml", entrypoint="main") as w:
        init = Container(name="init", image="init:1", command=["init"])
        train = Container(
            name="train", image="train:1", command=["torchrun"], resources=Resources(gpus=8)
        )
        export = Container(name="export", image="export:1", command=["export"])
        with DAG(name="main"):
            # in a DAG, calling a template adds a Task (Hera types the call None | Step | Task)
            init_task, train_task, export_task = (cast(Task, t()) for t in (init, train, export))
            init_task >> train_task
            train_task >> export_task
    w.to_dict()


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def rate(fn: Callable[[], object], seconds: float, repeats: int) -> float:
    """Best calls/s of ``fn`` over ``repeats`` windows of ``seconds`` each."""
    fn()
    best = 0.0
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            fn()
            n += 1
        best = max(best, n / (time.perf_counter() - start))
    return best


def wall(cmd: list[str], runs: int) -> float:
    """Median wall seconds of ``cmd`` (output discarded)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def kfp_python() -> Path:
    """The bench venv's python, with kfp installed (created once)."""
    python = BENCH_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    probe = subprocess.run(
        [str(python), "-c", "import kfp; print(kfp.__version__)"], capture_output=True, text=True
    )
    if probe.stdout.strip() != KFP.split("==")[1]:
        pip = [str(python), "-m", "pip", "install", "-q"]
        if subprocess.run([*pip, KFP]).returncode != 0:
            # kfp 2.17.3 asks for certifi>=2026.10.19, newer than the index here serves:
            # install kfp alone, then its requirements with certifi left to the newest served.
            subprocess.run([*pip, "--no-deps", KFP], check=True)
            requires = subprocess.run(
                [str(python), "-c", KFP_REQUIRES], check=True, capture_output=True, text=True
            ).stdout.splitlines()
            subprocess.run([*pip, *requires], check=True)
    return python


def kfp_rate(cpu: int, seconds: float, repeats: int) -> dict[str, Any]:
    out = subprocess.run(
        [str(kfp_python()), "-c", KFP_SCRIPT, str(cpu), str(seconds), str(repeats)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def machine() -> str:
    model = "unknown cpu"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-kfp", action="store_true", help="skip KFP's compiler")
    parser.add_argument("--quick", action="store_true", help="short windows, few runs")
    parser.add_argument("--cpu", type=int, default=0, help="core to pin to (default 0)")
    args = parser.parse_args()
    seconds, repeats, runs = (0.5, 2, 3) if args.quick else (2.0, 3, 7)
    os.sched_setaffinity(0, {args.cpu})

    from trainweave import yamlout
    from trainweave.adapters.argo import workflow
    from trainweave.adapters.trainjob.trainer import to_pipeline
    from trainweave.inputs import parse_runtime, parse_trainjob

    job = parse_trainjob(yaml.safe_load(TRAINJOB.read_text()))
    runtime = parse_runtime(yaml.safe_load(RUNTIME.read_text()))
    manifests = workflow.render(to_pipeline(job, runtime))

    def dump(docs: list[dict[str, Any]]) -> str:
        return yamlout.dump_all(docs)  # what `trainweave render` writes

    assert list(yaml.safe_load_all(dump(manifests))) == manifests

    def full() -> None:
        dump(workflow.render(to_pipeline(job, runtime)))

    def full_json() -> None:
        json.dumps(workflow.render(to_pipeline(job, runtime)))

    print(f"machine: {machine()}")
    print(
        f"python {platform.python_version()}, hera {metadata.version('hera')}, "
        f"pydantic {metadata.version('pydantic')}, PyYAML {yaml.__version__}, "
        f"yaml C dumper {'yes' if getattr(yaml, '__with_libyaml__', False) else 'no'}"
    )
    print(f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}; core {args.cpu}; {load()}")
    translate = rate(lambda: workflow.render(to_pipeline(job, runtime)), seconds, repeats)
    print(f"translate+render:      {translate:8.0f} /s  ({1e3 / translate:.2f} ms)  [{load()}]")
    dump_yaml = rate(lambda: dump(manifests), seconds, repeats)
    print(f"serialise (yaml):      {dump_yaml:8.0f} /s  ({1e3 / dump_yaml:.2f} ms)  [{load()}]")
    dump_json = rate(lambda: json.dumps(manifests), seconds, repeats)
    print(f"serialise (json.dumps):{dump_json:8.0f} /s  ({1e3 / dump_json:.3f} ms)  [{load()}]")
    renders = rate(full, seconds, repeats)
    print(f"full render (yaml):    {renders:8.0f} /s  ({1e3 / renders:.2f} ms)  [{load()}]")
    print(f"full render = {dump_json / renders:.0f}x json.dumps of the same manifests")
    with_json = rate(full_json, seconds, repeats)
    print(f"full render (json):    {with_json:8.0f} /s  ({1e3 / with_json:.2f} ms)  [{load()}]")
    hera = rate(hera_three_steps, seconds, repeats)
    print(f"hera alone, 3-step build+to_dict: {hera:8.0f} /s  ({1e3 / hera:.2f} ms)  [{load()}]")
    verdicts = [f"renders/s {renders:.0f} (target >= 500): {'ok' if renders >= 500 else 'MISSED'}"]
    if not args.no_kfp:
        kfp = kfp_rate(args.cpu, seconds, repeats)
        ratio = renders / kfp["compiles_per_s"]
        print(
            f"kfp {kfp['kfp']} compile (py {kfp['python']}): {kfp['compiles_per_s']:8.1f} /s "
            f"({1e3 / kfp['compiles_per_s']:.1f} ms)  [{load()}]"
        )
        verdicts.append(f"vs KFP {ratio:.1f}x (target >= 10x): {'ok' if ratio >= 10 else 'MISSED'}")
        verdicts.append(f"  (json output: {with_json / kfp['compiles_per_s']:.1f}x KFP)")
    cli = wall(
        [str(Path(sys.executable).parent / "trainweave"), "render", str(TRAINJOB),
         "--runtime", str(RUNTIME)],
        runs,
    )  # fmt: skip
    print(f"`trainweave render` wall (median of {runs}): {cli:.3f} s  [{load()}]")
    hera = wall([sys.executable, "-c", "import hera.workflows"], runs)
    base = wall([sys.executable, "-c", "pass"], runs)
    print(f"`python -c 'import hera.workflows'`: {hera:.3f} s (bare `python -c pass` {base:.3f} s)")
    verdicts.append(f"render wall {cli:.2f} s (target < 1.5 s): {'ok' if cli < 1.5 else 'MISSED'}")
    print("\n".join(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
