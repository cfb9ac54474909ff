"""Pod templates the Kubernetes API server (v1.36.4) refuses, each with the field it names.

Each case edits the pod template of the ``model-exporter`` job (replicatedJobs[3]) of
examples/llm-finetune/runtime.yaml, which both judges accept; no TrainJob field reaches that pod.
``tests/unit/test_pod_cases.py`` checks that trainweave refuses each naming that field in the
runtime; ``tests/e2e/test_pod_validation.py`` checks that the real kube-apiserver refuses a Pod of
that template naming it (server-side dry run). ``rule`` is the upstream code that refuses it
(k8s.io/kubernetes pkg/apis/core/validation/validation.go unless it says otherwise; "required"
and "enum" are the OpenAPI schema, enforced by the function named).

Fields are the API server's (``spec.containers[0].resources.requests[nvidia.com/gpu]``); where
trainweave names another one, ``offline`` holds trainweave's and ``why`` says why.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Json = dict[str, Any]
BASE = Path(__file__).parents[1] / "examples" / "llm-finetune" / "runtime.yaml"
JOB = 3  # model-exporter
RUNTIME_POD = f"spec.template.spec.replicatedJobs[{JOB}].template.spec.template"
# JobSet's addVolumes: a volumeClaimPolicies template a container mounts becomes a pod volume
# (sigs.k8s.io/jobset v0.12.0 pkg/controllers/volume_claim_policy.go addVolumes), its claim
# "<template>-<jobset>" (GeneratePVCName)
CLAIM_VOLUME = {
    "name": "initializer",
    "persistentVolumeClaim": {"claimName": "initializer-llama-support-ft"},
}


_MAP_KEY = re.compile(
    r"\[([^\]0-9][^\]]*)\]"
)  # requests[nvidia.com/gpu] -> requests.nvidia.com/gpu


@dataclass(frozen=True)
class PodCase:
    """A pod template the API refuses: ``edit`` applied to the pod spec; ``field`` the API names."""

    name: str
    family: str
    edit: Callable[[Json], None]
    field: str
    rule: str
    offline: str = ""  # trainweave's field, when it differs from the API server's
    why: str = ""
    # the API server refuses the body as it decodes it (400 BadRequest, no field named), before
    # validation: ``message`` is in its answer
    decode: str = ""

    @property
    def trainweave_field(self) -> str:
        """The field trainweave names, in the runtime (map keys as ``.key``)."""
        field = self.offline or self.field
        return RUNTIME_POD + "." + _MAP_KEY.sub(r".\1", field)


def runtime() -> Json:
    """The example runtime, which the API server and trainweave accept."""
    doc: Json = yaml.safe_load(BASE.read_text())
    return doc


def pod_spec(doc: Json) -> Json:
    """The model-exporter job's pod spec in runtime ``doc`` (mutable)."""
    spec: Json = doc["spec"]["template"]["spec"]["replicatedJobs"][JOB]["template"]["spec"]
    return spec["template"]["spec"]  # type: ignore[no-any-return]


def edited_runtime(case: PodCase) -> Json:
    """The example runtime with ``case``'s edit."""
    doc = copy.deepcopy(runtime())
    case.edit(pod_spec(doc))
    return doc


def pod(case: PodCase | None, name: str = "pod-case") -> Json:
    """A Pod of the (edited) template, with the volume JobSet adds; no Kueue queue label."""
    spec = pod_spec(edited_runtime(case) if case else runtime())
    spec["volumes"] = [*(spec.get("volumes") or []), CLAIM_VOLUME]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _c(**fields: Any) -> Callable[[Json], None]:
    """Set fields on the first container (None deletes)."""

    def edit(spec: Json) -> None:
        for key, value in fields.items():
            if value is None:
                spec["containers"][0].pop(key, None)
            else:
                spec["containers"][0][key] = value

    return edit


def _s(**fields: Any) -> Callable[[Json], None]:
    """Set pod spec fields."""
    return lambda spec: spec.update(copy.deepcopy(fields))


def _both(*edits: Callable[[Json], None]) -> Callable[[Json], None]:
    def edit(spec: Json) -> None:
        for one in edits:
            one(spec)

    return edit


def _mount(**fields: Any) -> Callable[[Json], None]:
    return lambda spec: spec["containers"][0]["volumeMounts"][0].update(fields)


def _res(requests: Json | None = None, limits: Json | None = None) -> Callable[[Json], None]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return _c(resources=resources)


def _node_terms(*expressions: Json) -> Callable[[Json], None]:
    terms = [{"matchExpressions": list(expressions)}]
    required = {"nodeSelectorTerms": terms}
    return _s(
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    )


C0 = "spec.containers[0]"
GPU = "nvidia.com/gpu"
SECRET = {"name": "hf-token", "key": "token"}
NODE_TERM = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
)
SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
UNINDEXED = (
    "the API server's error names the list, not the item (validation.go passes the list's"
    " path, not the item's index); trainweave names the item"
)

CASES = [
    # -- required fields (OpenAPI required; the function that enforces it) ---------------------
    PodCase("secret-key-ref-without-key", "required",
            _c(env=[{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token"}}}]),
            f"{C0}.env[0].valueFrom.secretKeyRef.key", "required; validateSecretKeySelector"),
    PodCase("config-map-key-ref-without-key", "required",
            _c(env=[{"name": "CFG", "valueFrom": {"configMapKeyRef": {"name": "cfg"}}}]),
            f"{C0}.env[0].valueFrom.configMapKeyRef.key", "required; validateConfigMapKeySelector"),
    PodCase("field-ref-without-field-path", "required",
            _c(env=[{"name": "POD", "valueFrom": {"fieldRef": {}}}]),
            f"{C0}.env[0].valueFrom.fieldRef.fieldPath", "required; validateObjectFieldSelector"),
    PodCase("volume-mount-without-mount-path", "required",
            _c(volumeMounts=[{"name": "initializer"}]),
            f"{C0}.volumeMounts[0].mountPath", "required; ValidateVolumeMounts"),
    PodCase("volume-mount-without-name", "required", _c(volumeMounts=[{"mountPath": "/workspace"}]),
            f"{C0}.volumeMounts[0].name", "required; ValidateVolumeMounts"),
    PodCase("pvc-without-claim-name", "required",
            _s(volumes=[{"name": "cache", "persistentVolumeClaim": {}}]),
            "spec.volumes[0].persistentVolumeClaim.claimName",
            "required; validatePersistentClaimVolumeSource"),
    PodCase("config-map-item-without-path", "required",
            _s(volumes=[{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a"}]}}]),
            "spec.volumes[0].configMap.items[0].path", "required; validateKeyToPath"),
    PodCase("container-without-name", "required", _c(name=None), f"{C0}.name",
            "required; validateContainerCommon"),
    PodCase("init-container-without-name", "required",
            _s(initContainers=[{"image": "busybox:1.37"}]), "spec.initContainers[0].name",
            "required; validateContainerCommon"),
    PodCase("env-without-name", "required", _c(env=[{"value": "1"}]), f"{C0}.env[0].name",
            "required; ValidateEnv"),
    PodCase("port-without-container-port", "required", _c(ports=[{"name": "metrics"}]),
            f"{C0}.ports[0].containerPort", "required; validateContainerPorts"),
    PodCase("host-path-without-path", "required", _s(volumes=[{"name": "h", "hostPath": {}}]),
            "spec.volumes[0].hostPath.path", "required; validateHostPathVolumeSource"),
    PodCase("spread-without-topology-key", "required",
            _s(topologySpreadConstraints=[{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
            "spec.topologySpreadConstraints[0].topologyKey",
            "required; validateTopologySpreadConstraints"),
    PodCase("readiness-gate-without-condition-type", "required", _s(readinessGates=[{}]),
            "spec.readinessGates[0].conditionType", "required; validateReadinessGates"),
    PodCase("seccomp-without-type", "required", _s(securityContext={"seccompProfile": {}}),
            "spec.securityContext.seccompProfile.type", "required; validateSeccompProfileField"),
    PodCase("scheduling-gate-without-name", "required", _s(schedulingGates=[{}]),
            "spec.schedulingGates[0]", "required; validateSchedulingGates",
            offline="spec.schedulingGates[0].name", why=UNINDEXED.replace(
                "the list, not the item (validation.go passes the list's path, not the item's index)",
                "the gate, not its name (validateSchedulingGates passes the item's path)")),
    # -- enums (OpenAPI enum; the function that enforces it) ----------------------------------
    PodCase("toleration-effect", "enum",
            _s(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoScheduling"}]),
            "spec.tolerations[0].effect", "enum; ValidateTolerations, validateTaintEffect"),
    PodCase("toleration-operator", "enum",
            _s(tolerations=[{"key": "gpu", "operator": "Equals", "value": "a100"}]),
            "spec.tolerations[0].operator", "enum; ValidateTolerations"),
    PodCase("image-pull-policy", "enum", _c(imagePullPolicy="Sometimes"),
            f"{C0}.imagePullPolicy", "enum; validatePullPolicy"),
    PodCase("restart-policy", "enum", _s(restartPolicy="Sometimes"), "spec.restartPolicy",
            "enum; validateRestartPolicy"),
    PodCase("port-protocol", "enum", _c(ports=[{"containerPort": 8080, "protocol": "tcp"}]),
            f"{C0}.ports[0].protocol", "enum; validateContainerPorts"),
    PodCase("dns-policy", "enum", _s(dnsPolicy="ClusterLast"), "spec.dnsPolicy",
            "enum; validateDNSPolicy"),
    PodCase("termination-message-policy", "enum", _c(terminationMessagePolicy="Logs"),
            f"{C0}.terminationMessagePolicy", "enum; validateContainerCommon"),
    PodCase("host-path-type", "enum",
            _s(volumes=[{"name": "h", "hostPath": {"path": "/data", "type": "Folder"}}]),
            "spec.volumes[0].hostPath.type", "enum; validateHostPathType"),
    PodCase("spread-when-unsatisfiable", "enum",
            _s(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "Maybe"}]),
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
            "enum; validateTopologySpreadConstraints"),
    PodCase("node-selector-operator", "enum", _node_terms({"key": "zone", "operator": "Like"}),
            f"{NODE_TERM}.matchExpressions[0].operator", "enum; ValidateNodeSelectorRequirement"),
    PodCase("probe-scheme", "enum",
            _c(livenessProbe={"httpGet": {"port": 8080, "scheme": "FTP"}}),
            f"{C0}.livenessProbe.httpGet.scheme", "enum; validateHTTPGetAction"),
    PodCase("mount-propagation", "enum", _mount(mountPropagation="Sideways"),
            f"{C0}.volumeMounts.mountPropagation", "enum; validateMountPropagation",
            offline=f"{C0}.volumeMounts[0].mountPropagation", why=UNINDEXED),
    # -- quantities (validateResourceRequirements) --------------------------------------------
    PodCase("fractional-gpu", "quantity", _res({GPU: "0.5"}, {GPU: "0.5"}),
            f"{C0}.resources.limits[{GPU}]", "ValidateResourceQuantityValue (IsIntegerResourceName)"),
    PodCase("request-above-limit", "quantity", _res({"cpu": "8"}, {"cpu": "4"}),
            f"{C0}.resources.requests", "validateResourceRequirements: request <= limit"),
    PodCase("extended-without-limit", "quantity", _res({"cpu": "8", GPU: "1"}),
            f"{C0}.resources.limits", "validateResourceRequirements: !IsOvercommitAllowed"),
    PodCase("extended-request-below-limit", "quantity", _res({GPU: "1"}, {GPU: "2"}),
            f"{C0}.resources.requests", "validateResourceRequirements: !IsOvercommitAllowed"),
    PodCase("negative-memory", "quantity", _res({"memory": "-1Gi"}),
            f"{C0}.resources.requests[memory]", "ValidateNonnegativeQuantity"),
    PodCase("hugepages-not-whole-pages", "quantity",
            _res({"memory": "1Gi", "hugepages-2Mi": "3Mi"}, {"memory": "1Gi", "hugepages-2Mi": "3Mi"}),
            f"{C0}.resources.limits[hugepages-2Mi]", "validateResourceQuantityHugePageValue"),
    PodCase("hugepages-without-cpu-or-memory", "quantity", _res(limits={"hugepages-2Mi": "4Mi"}),
            f"{C0}.resources", "validateResourceRequirements: HugePages require cpu or memory"),
    PodCase("resource-not-standard", "quantity", _res(limits={"gpu": "1"}),
            f"{C0}.resources.limits[gpu]", "validateContainerResourceName"),
    # -- names -----------------------------------------------------------------------------
    PodCase("init-container-named-as-container", "names",
            _s(initContainers=[{"name": "model-exporter", "image": "busybox:1.37"}]),
            "spec.initContainers[0].name", "validateInitContainers: Duplicate"),
    PodCase("two-containers-one-name", "names",
            lambda spec: spec["containers"].append({"name": "model-exporter", "image": "b:1"}),
            "spec.containers[1].name", "validateContainers: Duplicate"),
    PodCase("two-volumes-one-name", "names",
            _s(volumes=[{"name": "cache", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}]),
            "spec.volumes[1].name", "ValidateVolumes: Duplicate"),
    PodCase("two-ports-one-name", "names",
            _c(ports=[{"name": "metrics", "containerPort": 8080},
                      {"name": "metrics", "containerPort": 8081}]),
            f"{C0}.ports[1].name", "validateContainerPorts: Duplicate"),
    PodCase("container-name-not-a-label", "names", _c(name="Model_Exporter"), f"{C0}.name",
            "validateContainerCommon: ValidateDNS1123Label"),
    PodCase("volume-name-not-a-label", "names", _s(volumes=[{"name": "Cache", "emptyDir": {}}]),
            "spec.volumes[0].name", "ValidateVolumes: ValidateDNS1123Label"),
    PodCase("port-name-too-long", "names",
            _c(ports=[{"name": "prometheus-metrics", "containerPort": 9090}]),
            f"{C0}.ports[0].name", "validateContainerPorts: IsValidPortName"),
    PodCase("env-name-with-equals", "names", _c(env=[{"name": "A=B", "value": "1"}]),
            f"{C0}.env[0].name", "ValidateEnv: IsRelaxedEnvVarName"),
    PodCase("port-out-of-range", "names", _c(ports=[{"containerPort": 70000}]),
            f"{C0}.ports[0].containerPort", "validateContainerPorts: IsValidPortNum"),
    # -- references between fields --------------------------------------------------------
    PodCase("mount-of-undefined-volume", "references",
            lambda spec: spec["containers"][0]["volumeMounts"].append(
                {"name": "scratch", "mountPath": "/scratch"}),
            f"{C0}.volumeMounts[1].name", "ValidateVolumeMounts: IsMatchedVolume"),
    PodCase("device-of-undefined-volume", "references",
            _c(volumeDevices=[{"name": "raw", "devicePath": "/dev/xvdb"}]),
            f"{C0}.volumeDevices[0].name", "ValidateVolumeDevices: isMatchedDevice"),
    PodCase("two-mounts-one-path", "references",
            _both(_s(volumes=[{"name": "cache", "emptyDir": {}}]),
                  lambda spec: spec["containers"][0]["volumeMounts"].append(
                      {"name": "cache", "mountPath": "/workspace"})),
            f"{C0}.volumeMounts[1].mountPath", "ValidateVolumeMounts: must be unique"),
    PodCase("sub-path-absolute", "references", _mount(subPath="/etc"),
            f"{C0}.volumeMounts.subPath", "ValidateVolumeMounts: validateLocalDescendingPath",
            offline=f"{C0}.volumeMounts[0].subPath", why=UNINDEXED),
    PodCase("sub-path-backsteps", "references", _mount(subPath="output/../../etc"),
            f"{C0}.volumeMounts.subPath", "ValidateVolumeMounts: validatePathNoBacksteps",
            offline=f"{C0}.volumeMounts[0].subPath", why=UNINDEXED),
    PodCase("env-from-prefix", "references",
            _c(envFrom=[{"prefix": "HF=", "secretRef": {"name": "hf-token"}}]),
            f"{C0}.envFrom[0].prefix", "ValidateEnvFrom: IsRelaxedEnvVarName"),
    PodCase("env-from-without-source", "references", _c(envFrom=[{"prefix": "HF_"}]),
            f"{C0}.envFrom", "ValidateEnvFrom: must specify one of",
            offline=f"{C0}.envFrom[0]", why=UNINDEXED),
    PodCase("value-from-two-sources", "references",
            _c(env=[{"name": "T", "valueFrom": {"secretKeyRef": SECRET,
                                                "configMapKeyRef": SECRET}}]),
            f"{C0}.env[0].valueFrom", "validateEnvVarValueFrom: more than one source"),
    PodCase("volume-two-sources", "references",
            _s(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/data"}}]),
            "spec.volumes[0].hostPath", "validateVolumeSource: more than 1 volume type"),
    PodCase("claim-not-in-pod", "references",
            _c(resources={"claims": [{"name": "gpus"}]}),
            f"{C0}.resources.claims[0]", "validateResourceClaimNames: NotFound"),
    # -- tolerations ------------------------------------------------------------------------
    PodCase("toleration-empty-key-equal", "tolerations",
            _s(tolerations=[{"operator": "Equal", "value": "a100"}]),
            "spec.tolerations[0].operator", "ValidateTolerations: operator must be Exists"),
    PodCase("toleration-seconds-not-no-execute", "tolerations",
            _s(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule",
                             "tolerationSeconds": 30}]),
            "spec.tolerations[0].effect", "ValidateTolerations: effect must be 'NoExecute'"),
    PodCase("toleration-exists-with-value", "tolerations",
            _s(tolerations=[{"key": "gpu", "operator": "Exists", "value": "a100"}]),
            "spec.tolerations[0].operator", "ValidateTolerations: value must be empty"),
    # -- image ------------------------------------------------------------------------------
    PodCase("empty-image", "image", _c(image=""), f"{C0}.image", "validateContainerCommon"),
    PodCase("no-image", "image", _c(image=None), f"{C0}.image", "validateContainerCommon"),
    PodCase("init-container-without-image", "image", _s(initContainers=[{"name": "setup"}]),
            "spec.initContainers[0].image", "validateContainerCommon"),
    # -- issue 38: rules the render did not apply -------------------------------------------
    PodCase("value-with-value-from", "references",
            _c(env=[{"name": "T", "value": "1", "valueFrom": {"secretKeyRef": SECRET}}]),
            f"{C0}.env[0].valueFrom", "validateEnvVarValueFrom: may not be specified when `value`"),
    PodCase("image-trailing-whitespace", "image",
            lambda spec: spec["containers"][0].update(image=spec["containers"][0]["image"] + " "),
            f"{C0}.image", "validateContainerCommon: leading or trailing whitespace"),
    PodCase("init-container-restart-policy", "enum",
            _s(initContainers=[{"name": "setup", "image": "busybox:1.37",
                                "restartPolicy": "Sometimes"}]),
            "spec.initContainers[0].restartPolicy",
            "validateInitContainerRestartPolicy -> validateContainerRestartPolicy (ContainerRestartRules"
            " is on in v1.36: Never and OnFailure are accepted)"),
    PodCase("init-container-probe-not-sidecar", "probes",
            _s(initContainers=[{"name": "setup", "image": "busybox:1.37",
                                "readinessProbe": {"exec": {"command": ["true"]}}}]),
            "spec.initContainers[0].readinessProbe",
            "validateInitContainers: may not be set without restartPolicy=Always"),
    PodCase("probe-two-handlers", "probes",
            _c(livenessProbe={"exec": {"command": ["true"]}, "httpGet": {"port": 8080}}),
            f"{C0}.livenessProbe.httpGet", "validateHandler: more than 1 handler type"),
    PodCase("lifecycle-hook-without-handler", "probes", _c(lifecycle={"preStop": {}}),
            f"{C0}.lifecycle.preStop", "validateHandler: must specify a handler type"),
    PodCase("host-network-host-port", "host",
            _both(_s(hostNetwork=True), _c(ports=[{"containerPort": 8080, "hostPort": 9090}])),
            f"{C0}.ports[0].hostPort", "validatePodHostNetworkDeps: must match `containerPort`"),
    PodCase("privileged-without-escalation", "host",
            _c(securityContext={"privileged": True, "allowPrivilegeEscalation": False}),
            f"{C0}.securityContext", "ValidateSecurityContext: privileged and no escalation"),
    PodCase("host-pid-share-process-namespace", "host",
            _s(hostPID=True, shareProcessNamespace=True),
            "spec.securityContext.shareProcessNamespace",
            "validatePodSpecSecurityContext: ShareProcessNamespace and HostPID",
            offline="spec.shareProcessNamespace",
            why="the API server's internal PodSpec keeps shareProcessNamespace in its security"
            " context; the v1 Pod's field is spec.shareProcessNamespace"),
    PodCase("node-selector-value", "names", _s(nodeSelector={"nvidia.com/gpu.product": "NVIDIA A100"}),
            "spec.nodeSelector", "ValidatePodSpec: ValidateLabels(nodeSelector)",
            offline="spec.nodeSelector[nvidia.com/gpu.product]",
            why="the API server names the map (ValidateLabels passes its path); trainweave the key"),
    PodCase("dns-none-without-config", "references", _s(dnsPolicy="None"), "spec.dnsConfig",
            "validatePodDNSConfig: must provide `dnsConfig`"),
    PodCase("size-limit-not-a-quantity", "quantity",
            _s(volumes=[{"name": "shm", "emptyDir": {"sizeLimit": "64Gb"}}]),
            "spec.volumes[0].emptyDir.sizeLimit", "resource.ParseQuantity, as the body is decoded",
            decode="quantities must match the regular expression"),
]  # fmt: skip


@dataclass(frozen=True)
class JobCase:
    """A Job the API server refuses (``ValidateJobSpec``): ``edit`` applied to the Job spec of
    the model-exporter replicatedJob (``JOB_BASE`` first); ``field`` the API names, in the Job."""

    name: str
    edit: Callable[[Json], None]
    field: str
    rule: str

    @property
    def trainweave_field(self) -> str:
        return f"spec.template.spec.replicatedJobs[{JOB}].template." + self.field


def job_spec(doc: Json) -> Json:
    """The model-exporter job's Job spec in runtime ``doc`` (mutable)."""
    spec: Json = doc["spec"]["template"]["spec"]["replicatedJobs"][JOB]["template"]["spec"]
    return spec


def _job_base(spec: Json) -> None:
    """What a Job with a podFailurePolicy needs: pods restartPolicy Never (ValidateJobSpec)."""
    spec["template"]["spec"]["restartPolicy"] = "Never"


def edited_job_runtime(case: JobCase | None) -> Json:
    doc = copy.deepcopy(runtime())
    _job_base(job_spec(doc))
    if case:
        case.edit(job_spec(doc))
    return doc


def job(case: JobCase | None, name: str = "job-case") -> Json:
    """A batch/v1 Job of the (edited) template, with the volume JobSet adds; no Kueue label."""
    spec = job_spec(edited_job_runtime(case))
    pod_spec = spec["template"]["spec"]
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), CLAIM_VOLUME]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def _exit_codes(operator: str, values: list[int]) -> Callable[[Json], None]:
    rule = {"action": "FailJob", "onExitCodes": {"operator": operator, "values": values}}
    return lambda spec: spec.update(podFailurePolicy={"rules": [rule]})


POLICY_VALUES = "spec.podFailurePolicy.rules[0].onExitCodes.values"
JOB_CASES = [
    JobCase("exit-code-0-in", _exit_codes("In", [0, 1]), f"{POLICY_VALUES}[0]",
            "validatePodFailurePolicyRuleOnExitCodes: must not be 0 for the In operator"),
    JobCase("exit-codes-repeated", _exit_codes("NotIn", [1, 1]), f"{POLICY_VALUES}[1]",
            "validatePodFailurePolicyRuleOnExitCodes: Duplicate"),
    JobCase("exit-codes-unordered", _exit_codes("In", [3, 2]), POLICY_VALUES,
            "validatePodFailurePolicyRuleOnExitCodes: must be ordered"),
]  # fmt: skip
