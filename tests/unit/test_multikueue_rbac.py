"""deploy/multikueue-worker-rbac.yaml and the kubeconfig hack/multicluster_docs.py gives the manager
for a worker (docs/multicluster.md): named verbs only, a token and nothing else."""

from __future__ import annotations

import yaml

from tests.unit.hack_scripts import load

multicluster = load("multicluster_docs")

ADMIN = """
apiVersion: v1
kind: Config
clusters:
- {name: kwok-w, cluster: {server: "https://127.0.0.1:1234", certificate-authority-data: Q0E=}}
users:
- {name: kwok-w, user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}}
contexts:
- {name: kwok-w, context: {cluster: kwok-w, user: kwok-w}}
current-context: kwok-w
"""


def test_worker_clusterrole_names_every_verb_and_binds_the_service_account() -> None:
    docs, ns, sa = multicluster.worker_rbac()
    assert (ns, sa) == ("kueue-system", "multikueue-manager")
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    rules = kinds["ClusterRole"]["rules"]
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
    by = {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in rules}
    assert by[("kueue.x-k8s.io", "workloads")] >= {"create", "delete", "watch"}
    assert "secrets" not in {res for _, res in by} and "nodes" not in {res for _, res in by}
    subject = kinds["ClusterRoleBinding"]["subjects"][0]
    assert (subject["namespace"], subject["name"]) == (ns, sa)
    assert (
        kinds["ClusterRoleBinding"]["roleRef"]["name"] == kinds["ClusterRole"]["metadata"]["name"]
    )


def test_token_kubeconfig_keeps_server_and_ca_and_drops_the_admin_certificate() -> None:
    doc = yaml.safe_load(multicluster.token_kubeconfig(ADMIN, "tok"))
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:1234",
        "certificate-authority-data": "Q0E=",
    }
    assert [u["user"] for u in doc["users"]] == [{"token": "tok"}]
    ctx = doc["contexts"][0]
    assert (
        doc["current-context"] == ctx["name"] and ctx["context"]["user"] == doc["users"][0]["name"]
    )
