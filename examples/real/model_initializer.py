"""Model initializer: the initial linear model in ``$WORKSPACE/model/model.json``.

Weights and bias zeros (MODEL_INIT=zeros, the default) or drawn from N(0, 0.1) with
MODEL_SEED (MODEL_INIT=random). The stand-in for Trainer's model initializer.
Env: FEATURES (4), MODEL_INIT (zeros|random), MODEL_SEED (0), WORKSPACE.
"""

from __future__ import annotations

import os
import random

import workspace as ws


def main() -> None:
    features = ws.env_int("FEATURES", 4, minimum=1)
    init = os.environ.get("MODEL_INIT") or "zeros"
    seed = ws.env_int("MODEL_SEED", 0)
    if init == "zeros":
        weights, bias = [0.0] * features, 0.0
    elif init == "random":
        rng = random.Random(seed)
        weights = [rng.gauss(0.0, 0.1) for _ in range(features)]
        bias = rng.gauss(0.0, 0.1)
    else:
        ws.fail(f"MODEL_INIT={init!r} is not zeros or random", ws.EXIT_CONFIG)
    path = ws.root() / "model" / "model.json"
    model = {"features": features, "weights": weights, "bias": bias, "init": init, "seed": seed}
    ws.write_json(path, model)
    print(
        f"model-initializer: wrote {path} ({init}, {features} features) "
        f"sha256={ws.model_sha256(ws.parameters(model))}",
        flush=True,
    )


if __name__ == "__main__":
    ws.run("model-initializer", main)
