"""Every manifest in deploy/ checked against a schema, as kubeconform would (it does not
install from PyPI, Debian or npm): the KubeRay kinds against the CRDs' own OpenAPI schemas
(vendored in tests/cluster/schemas, from ray-project/kuberay, Apache License 2.0), made
strict (an unknown field is an error, not silently dropped); the core kinds' pod templates
against the same Kubernetes PodTemplateSpec schema the RayCluster CRD embeds, and their
other fields against a small schema here. Then what ties the files together: every
Service selects a workload, every Secret and ConfigMap a pod reads exists, every
`CHORUS_*` setting is one Chorus reads, and the cluster's placement parses."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml

from actors.runtime.placement import parse_placement
from tests.support.ray_env import ROOT

DEPLOY = ROOT / "deploy"
SCHEMAS = Path(__file__).parent / "schemas"
CRDS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices"}


def strict(schema: object) -> object:
    """Like kubeconform -strict: objects that list their properties allow no others."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@cache
def crd_schema(kind: str) -> dict:
    body = json.loads((SCHEMAS / f"{CRDS[kind]}.v1.json").read_text())
    schema = strict(body["schema"])
    schema["properties"]["metadata"] = METADATA  # the CRD leaves metadata to the API server
    return schema


def pod_template_schema() -> dict:
    cluster = crd_schema("RayCluster")
    return copy.deepcopy(cluster["properties"]["spec"]["properties"]["headGroupSpec"]["properties"]["template"])


METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "additionalProperties": False,
}
SELECTOR = {
    "type": "object", "required": ["matchLabels"], "additionalProperties": False,
    "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
}  # fmt: skip


def pvc_spec() -> dict:
    return {
        "type": "object", "required": ["accessModes", "resources"], "additionalProperties": False,
        "properties": {
            "accessModes": {"type": "array", "items": {"enum": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]}},
            "storageClassName": {"type": "string"},
            "resources": {"type": "object", "additionalProperties": False, "required": ["requests"], "properties": {
                "requests": {"type": "object", "required": ["storage"], "properties": {"storage": {"type": "string"}}}}},
        },
    }  # fmt: skip


def core_schema(kind: str) -> dict:
    def obj(api: str, spec: dict | None = None, **extra: dict) -> dict:
        props = {"apiVersion": {"const": api}, "kind": {"const": kind}, "metadata": METADATA, **extra}
        if spec is not None:
            props["spec"] = spec
        return {"type": "object", "required": list(props), "properties": props, "additionalProperties": False}

    workload = {
        "replicas": {"type": "integer", "minimum": 0},
        "selector": SELECTOR,
        "template": pod_template_schema(),
    }
    if kind == "Deployment":
        return obj("apps/v1", {"type": "object", "required": ["selector", "template"], "additionalProperties": False,
                               "properties": workload})  # fmt: skip
    if kind == "StatefulSet":
        claim = {"type": "object", "required": ["metadata", "spec"], "additionalProperties": False,
                 "properties": {"metadata": METADATA, "spec": pvc_spec()}}  # fmt: skip
        props = {**workload, "serviceName": {"type": "string"}, "volumeClaimTemplates": {"type": "array", "items": claim}}
        return obj("apps/v1", {"type": "object", "required": ["selector", "template", "serviceName"],
                               "additionalProperties": False, "properties": props})  # fmt: skip
    if kind == "Service":
        port = {"type": "object", "required": ["port"], "additionalProperties": False, "properties": {
            "name": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "targetPort": {"type": ["integer", "string"]}, "protocol": {"enum": ["TCP", "UDP", "SCTP"]}}}  # fmt: skip
        spec = {"type": "object", "required": ["selector", "ports"], "additionalProperties": False, "properties": {
            "selector": {"type": "object", "additionalProperties": {"type": "string"}},
            "ports": {"type": "array", "minItems": 1, "items": port},
            "type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]}}}  # fmt: skip
        return obj("v1", spec)
    if kind == "PersistentVolumeClaim":
        return obj("v1", pvc_spec())
    if kind == "Secret":
        schema = obj("v1", None, type={"type": "string"},
                     stringData={"type": "object", "additionalProperties": {"type": "string"}})  # fmt: skip
        return schema
    if kind == "ConfigMap":
        return obj("v1", None, data={"type": "object", "additionalProperties": {"type": "string"}})
    raise AssertionError(f"no schema for kind {kind}: add one")


def schema_for(doc: dict) -> dict:
    kind = doc.get("kind")
    if kind in CRDS:
        assert doc.get("apiVersion") == "ray.io/v1", doc.get("apiVersion")
        return crd_schema(kind)
    return core_schema(kind)


def manifests() -> list[tuple[str, dict]]:
    found = []
    for path in sorted((DEPLOY / "kuberay").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found.append((f"{path.relative_to(DEPLOY)}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


MANIFESTS = manifests()


def test_there_are_manifests_for_each_part():
    kinds = {doc["kind"] for _, doc in MANIFESTS}
    assert {"RayCluster", "RayJob", "RayService", "StatefulSet", "Deployment", "Service"} <= kinds
    names = {name.split(":")[0] for name, _ in MANIFESTS}
    assert {"kuberay/raycluster.yaml", "kuberay/rayjob.yaml", "kuberay/postgres.yaml", "kuberay/qdrant.yaml",
            "kuberay/llm-llamacpp.yaml", "kuberay/llm-vllm.yaml"} <= names  # fmt: skip


@pytest.mark.parametrize(("name", "doc"), MANIFESTS, ids=[n for n, _ in MANIFESTS])
def test_each_manifest_matches_its_schema(name, doc):
    errors = sorted(jsonschema.Draft7Validator(schema_for(doc)).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{name}: {'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors)


def test_the_schema_check_catches_a_typo_and_a_wrong_type():
    cluster = copy.deepcopy(next(doc for _, doc in MANIFESTS if doc["kind"] == "RayCluster"))
    cluster["spec"]["workerGroupSpecs"][0]["replica"] = 2  # a typo for `replicas`
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "6379"
    messages = [e.message for e in jsonschema.Draft7Validator(crd_schema("RayCluster")).iter_errors(cluster)]
    assert any("'replica' was unexpected" in m for m in messages)
    assert any("'6379' is not of type 'integer'" in m for m in messages)


def pods(doc: dict) -> list[dict]:
    """The pod specs in a manifest, whatever its kind."""
    spec = doc.get("spec", {})
    if doc["kind"] in ("Deployment", "StatefulSet"):
        return [spec["template"]["spec"]]
    if doc["kind"] == "RayService":
        spec = spec["rayClusterConfig"]
    if doc["kind"] == "RayJob":
        return [spec["submitterPodTemplate"]["spec"]] if "submitterPodTemplate" in spec else []
    if doc["kind"] in ("RayCluster", "RayService"):
        return [spec["headGroupSpec"]["template"]["spec"], *(g["template"]["spec"] for g in spec.get("workerGroupSpecs", []))]
    return []


def test_the_files_fit_together():
    by_kind: dict[str, dict[str, dict]] = {}
    for _, doc in MANIFESTS:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    labels = [doc["spec"]["template"]["metadata"]["labels"] for kind in ("Deployment", "StatefulSet") for doc in by_kind.get(kind, {}).values()]
    for name, service in by_kind["Service"].items():
        selector = service["spec"]["selector"].items()
        assert any(selector <= workload.items() for workload in labels), f"Service {name} selects no workload"
    for kind in ("Deployment", "StatefulSet"):
        for name, doc in by_kind[kind].items():
            assert doc["spec"]["selector"]["matchLabels"].items() <= doc["spec"]["template"]["metadata"]["labels"].items(), name
    for _, doc in MANIFESTS:
        for pod in pods(doc):
            for container in pod["containers"]:
                for source in container.get("envFrom", []):
                    assert source["configMapRef"]["name"] in by_kind["ConfigMap"]
                for var in container.get("env", []):
                    ref = var.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        secret = by_kind["Secret"][ref["name"]]
                        assert ref["key"] in secret["stringData"], ref
    for configmap in by_kind["ConfigMap"].values():
        for key in configmap["data"]:
            assert key in settings_env_names(), f"{key} is not a setting Chorus reads"
        parse_placement(configmap["data"].get("CHORUS_PLACEMENT", ""))


def settings_env_names() -> set[str]:
    """The CHORUS_* variables Settings.from_env reads."""
    import re

    text = (ROOT / "actors" / "runtime" / "settings.py").read_text()
    return set(re.findall(r'"(CHORUS_[A-Z_]+)"', text))


def serve_configs() -> list[tuple[str, dict]]:
    """Ray Serve configs: deploy/serve*.yaml, and the RayServices' serveConfigV2."""
    found = [(p.name, yaml.safe_load(p.read_text())) for p in sorted(DEPLOY.glob("serve*.yaml"))]
    found += [(name, yaml.safe_load(doc["spec"]["serveConfigV2"])) for name, doc in MANIFESTS if doc["kind"] == "RayService"]
    return found


@pytest.mark.parametrize(("name", "config"), serve_configs(), ids=[n for n, _ in serve_configs()])
def test_each_serve_config_matches_ray_serves_schema(name, config):
    from ray.serve.schema import ServeDeploySchema

    parsed = ServeDeploySchema.model_validate(config)
    assert parsed.applications and all(app.import_path for app in parsed.applications)


def test_the_ray_up_yaml_matches_rays_cluster_schema():
    import ray.autoscaler

    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    config = yaml.safe_load((DEPLOY / "ray-cluster.yaml").read_text())
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(config)]
    assert not errors, errors
