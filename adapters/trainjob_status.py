"""Trainer v2.3.0's TrainJobStatus plugin on a Pipeline: what the trainer's pods get. Pure.

``plugins/trainjobstatus/trainjobstatus.go``, when the status server is on
(``Options.trainer_status``; upstream: the ``TrainJobStatus`` feature gate):

- EnforceMLPolicy: every container of the trainer job (``FindPodSetByAncestor(trainer)``) gets
  ``KUBEFLOW_TRAINER_SERVER_URL`` (the server's base URL + ``StatusUrl(ns, name)``),
  ``KUBEFLOW_TRAINER_SERVER_CA_CERT`` and ``KUBEFLOW_TRAINER_SERVER_TOKEN`` (files under
  ``/var/run/secrets/kubeflow/trainer``) and that folder's read-only mount; the pod gets the
  ``kubeflow-trainer-token`` projected volume: a ServiceAccount token with the audience
  ``TokenAudience(ns, name)`` (3600 s) and ``ca.crt`` of the ConfigMap ``<name>-tls-config``.
  The TrainJob's own ``spec.trainer.env`` is upserted again afterwards: upstream's JobSet builder
  applies it after every plugin (``builder.go`` Trainer()), so it wins on the same name.
- Build: that ConfigMap, in the TrainJob's namespace, holding the server's CA certificate.

``adapters.render.render`` calls both when ``Options.trainer_status`` is set.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from trainweave import trainer_status as ts
from trainweave.adapters.trainjob import wirelists
from trainweave.labels import Ancestor
from trainweave.model import Job, Pipeline
from trainweave.trainer_status import ServerRef

Json = dict[str, Any]


def env(server: ServerRef, namespace: str, name: str) -> list[Json]:
    """trainjobstatus.go createEnvVars."""
    return [
        {"name": ts.ENV_URL, "value": server.url.rstrip("/") + ts.status_url(namespace, name)},
        {"name": ts.ENV_CA_CERT, "value": f"{ts.CONFIG_MOUNT_PATH}/{ts.CA_CERT_FILE}"},
        {"name": ts.ENV_TOKEN, "value": f"{ts.CONFIG_MOUNT_PATH}/{ts.TOKEN_FILE}"},
    ]


def volume_mount() -> Json:
    """trainjobstatus.go createTokenVolumeMount."""
    return {"name": ts.TOKEN_VOLUME, "mountPath": ts.CONFIG_MOUNT_PATH, "readOnly": True}


def volume(namespace: str, name: str) -> Json:
    """trainjobstatus.go createTokenVolume: the token and the CA in one projected volume."""
    return {
        "name": ts.TOKEN_VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": ts.token_audience(namespace, name),
                        "expirationSeconds": ts.TOKEN_EXPIRY_SECONDS,
                        "path": ts.TOKEN_FILE,
                    }
                },
                {
                    "configMap": {
                        "name": ts.ca_config_map_name(name),
                        "items": [{"key": ts.CA_CERT_KEY, "path": ts.CA_CERT_FILE}],
                    }
                },
            ]
        },
    }


def ca_config_map(server: ServerRef, pipeline: Pipeline) -> Json:
    """trainjobstatus.go buildStatusServerCaCrtConfigMap (the owner comes with every object)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ts.ca_config_map_name(pipeline.name),
            "namespace": pipeline.namespace,
        },
        "data": {ts.CA_CERT_KEY: server.ca_pem},
    }


def _job(job: Job, server: ServerRef, pipeline: Pipeline, trainer_env: Iterable[Json]) -> Job:
    if job.ancestor is not Ancestor.TRAINER:
        return job
    template = copy.deepcopy(job.pod_template)
    spec = template["spec"]
    for container in spec["containers"]:
        wirelists.upsert_env(container, env(server, pipeline.namespace, pipeline.name))
        wirelists.upsert_by_name(container.setdefault("volumeMounts", []), [volume_mount()])
        if container.get("name") == "node":
            wirelists.upsert_env(container, trainer_env)
    wirelists.upsert_by_name(
        spec.setdefault("volumes", []), [volume(pipeline.namespace, pipeline.name)]
    )
    return dataclasses.replace(job, pod_template=template)


def enforce(pipeline: Pipeline, server: ServerRef, trainer_env: Iterable[Json] = ()) -> Pipeline:
    """``pipeline`` with the plugin's env, mount and volume on its trainer job's pods;
    ``trainer_env``: the TrainJob's ``spec.trainer.env`` (upserted last on ``node``)."""
    trainer_env = list(trainer_env)
    steps = tuple(
        dataclasses.replace(
            step, jobs=tuple(_job(job, server, pipeline, trainer_env) for job in step.jobs)
        )
        for step in pipeline.steps
    )
    return dataclasses.replace(pipeline, steps=steps)
