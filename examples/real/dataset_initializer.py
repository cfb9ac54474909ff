"""Dataset initializer: a seeded synthetic linear-regression dataset in ``$WORKSPACE/dataset/``.

Rows ``x1..xk,y`` with x ~ N(0, 1) and ``y = w.x + b + noise``; the true ``w`` and ``b`` are
drawn from the same seed and kept in ``meta.json``; ``SHA256SUMS`` covers both files. The
stand-in for Trainer's dataset initializer (which downloads from ``STORAGE_URI``).
Env: DATASET_ROWS (2000), FEATURES (4), DATASET_SEED (7), DATASET_NOISE (0.1), WORKSPACE.
"""

from __future__ import annotations

import random

import workspace as ws


def main() -> None:
    rows = ws.env_int("DATASET_ROWS", 2000, minimum=1)
    features = ws.env_int("FEATURES", 4, minimum=1)
    seed = ws.env_int("DATASET_SEED", 7)
    noise = ws.env_float("DATASET_NOISE", 0.1)
    rng = random.Random(seed)
    weights = [round(rng.uniform(-3.0, 3.0), 3) for _ in range(features)]
    bias = round(rng.uniform(-1.0, 1.0), 3)

    lines = [",".join([f"x{i + 1}" for i in range(features)] + ["y"])]
    for _ in range(rows):
        x = [rng.gauss(0.0, 1.0) for _ in range(features)]
        y = sum(w * v for w, v in zip(weights, x, strict=True)) + bias + rng.gauss(0.0, noise)
        lines.append(",".join(repr(v) for v in [*x, y]))

    folder = ws.root() / "dataset"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ws.DATASET_FILE).write_text("\n".join(lines) + "\n")
    meta = {
        "rows": rows,
        "features": features,
        "seed": seed,
        "noise": noise,
        "true_weights": weights,
        "true_bias": bias,
    }
    ws.write_json(folder / ws.META_FILE, meta)
    dataset_id = ws.write_sums(folder, [ws.DATASET_FILE, ws.META_FILE])
    print(
        f"dataset-initializer: wrote {rows} rows x {features} features (seed {seed}, "
        f"noise {noise}) to {folder / ws.DATASET_FILE}",
        flush=True,
    )
    print(f"dataset-initializer: true weights={weights} bias={bias}", flush=True)
    print(f"dataset-initializer: {folder / ws.SUMS_FILE} sha256={dataset_id}", flush=True)


if __name__ == "__main__":
    ws.run("dataset-initializer", main)
