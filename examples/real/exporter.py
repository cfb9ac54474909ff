"""Exporter: checks the trained model and writes it as text to ``$WORKSPACE/export/model.txt``.

Recomputes, over the whole dataset, the loss of the initial model (``model/model.json``) and of
the trained one (``output/model.json``) and fails (exit 3) unless the trained loss is below
EXPORT_MAX_LOSS_RATIO (0.1) times the initial loss. The stand-in for a post-processor that
merges and pushes a fine-tuned model. Env: EXPORT_MAX_LOSS_RATIO, WORKSPACE.
"""

from __future__ import annotations

import workspace as ws


def main() -> None:
    ratio = ws.env_float("EXPORT_MAX_LOSS_RATIO", 0.1)
    root = ws.root()
    dataset_id = ws.verify_sums(root / "dataset")
    initial = ws.read_model(root / "model" / "model.json")
    trained = ws.read_model(root / "output" / "model.json")
    if trained["features"] != initial["features"]:
        ws.fail(
            f"the trained model has {trained['features']} features, the initial one "
            f"{initial['features']}",
            ws.EXIT_DATA,
        )
    if trained.get("dataset_sha256") != dataset_id:
        ws.fail(
            f"the model was trained on dataset {trained.get('dataset_sha256')}, "
            f"the workspace holds {dataset_id}",
            ws.EXIT_DATA,
        )
    rows = ws.read_rows(root / "dataset" / ws.DATASET_FILE, initial["features"])
    initial_loss = ws.mean_squared_error(ws.parameters(initial), rows)
    trained_loss = ws.mean_squared_error(ws.parameters(trained), rows)
    print(
        f"exporter: loss {initial_loss:.6f} (initial model) -> {trained_loss:.6f} (trained, "
        f"trainer reported {trained.get('final_loss')}), limit {ratio} x initial",
        flush=True,
    )
    if not trained_loss < ratio * initial_loss:
        ws.fail(
            f"the trained loss {trained_loss:.6f} is not below {ratio} x the initial loss "
            f"{initial_loss:.6f}",
            ws.EXIT_DATA,
        )
    true_weights = trained.get("true_weights") or [None] * trained["features"]
    lines = [f"# linear model, {len(rows)} rows, loss {trained_loss!r}"]
    for i, (w, t) in enumerate(zip(trained["weights"], true_weights, strict=True), start=1):
        lines.append(f"w{i} = {w!r}  # true {t}")
    lines.append(f"b = {trained['bias']!r}  # true {trained.get('true_bias')}")
    lines.append(f"model_sha256 = {trained.get('model_sha256')}")
    path = root / "export" / "model.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    learned = ", ".join(f"{w:.4f}" for w in trained["weights"])
    print(f"exporter: learned weights=[{learned}] bias={trained['bias']:.4f}", flush=True)
    print(f"exporter: wrote {path}", flush=True)


if __name__ == "__main__":
    ws.run("exporter", main)
