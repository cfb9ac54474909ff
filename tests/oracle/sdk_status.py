"""Run by the Kubeflow SDK 0.5.0's own interpreter (tests.oracle.harness.sdk_python).

``post PROGRESS SECONDS NAME=VALUE...``: the SDK's ``update_trainjob_status`` (what a training
script calls), with the ``KUBEFLOW_TRAINER_SERVER_*`` environment the caller gives; exit 0 when
the SDK says it was sent. ``read``: a TrainJob (JSON on stdin) through the SDK's TrainJob model;
prints its ``status.trainer_status`` as the SDK holds it (JSON).
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    if sys.argv[1] == "post":
        from kubeflow.trainer.backends.kubernetes.utils import update_trainjob_status

        metrics = dict(arg.split("=", 1) for arg in sys.argv[4:])
        sent = update_trainjob_status(int(sys.argv[2]), int(sys.argv[3]), metrics)
        return 0 if sent else 1
    from kubeflow_trainer_api.models import TrainerV1alpha1TrainJob

    job = TrainerV1alpha1TrainJob.from_dict(json.load(sys.stdin))
    status = job.status.trainer_status if job.status else None
    print(json.dumps(status.to_dict() if status else None, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
