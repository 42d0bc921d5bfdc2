"""The deployment files (deploy/): Kustomize renders and validates, compose and HAProxy say what the docs promise."""

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from collab.config import Settings
from collab.kit.jobs import LANES
from support.clients import _missing

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose"
K8S = DEPLOY / "k8s"
OVERLAYS = ["base", "overlays/external", "overlays/cnpg", "overlays/redis-sentinel"]
K8S_VERSION = "1.32.0"
# Custom resources have no schema in kubernetes-validate; they are checked field by field below.
CRD_GROUPS = {"postgresql.cnpg.io/v1"}
# Placeholders the shared haproxy.cfg and sentinel.conf read from the environment: deploy inputs, not settings.
PLACEHOLDERS = {"COLLAB_LB_BIND", "COLLAB_API_1", "COLLAB_API_2", "COLLAB_REDIS_MASTER"}
SETTINGS = {f"COLLAB_{name.upper()}" for name in Settings.model_fields}
# Containers that run collab (the image built from the repository's Dockerfile).
COLLAB_KINDS = {"Deployment", "Job"}


def kubectl() -> str:
    """kubectl with its built-in kustomize (v1.32 here and in CI)."""
    found = shutil.which("kubectl")
    if not found:
        _missing("kubectl is not installed (it renders deploy/k8s with its built-in kustomize)")
    return found


def haproxy() -> str:
    """HAProxy, to check the shipped haproxy.cfg (`make test-clients` installs it)."""
    found = shutil.which("haproxy")
    if not found:
        _missing("haproxy is not installed: run `make test-clients` (apt-get install haproxy)")
    return found


@cache
def _render(path: str) -> tuple:
    result = subprocess.run([kubectl(), "kustomize", path], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"kubectl kustomize {path} failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(overlay: str) -> list[dict]:
    """The objects `kubectl kustomize deploy/k8s/<overlay>` renders."""
    return list(_render(str(K8S / overlay)))


def find(docs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    """The rendered objects of a kind (and name)."""
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[dict], kind: str, name: str) -> dict:
    """The one rendered object of this kind and name."""
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def collab_containers(docs: list[dict]) -> list[tuple[str, dict]]:
    """(owner name, container) for every container that runs collab."""
    out = []
    for doc in docs:
        if doc["kind"] in COLLAB_KINDS and doc["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "collab":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                out.append((doc["metadata"]["name"], container))
    assert out, "no collab containers rendered"
    return out


def env_of(container: dict) -> dict[str, dict]:
    """A container's env entries by name."""
    return {e["name"]: e for e in container.get("env", [])}


def drain_s(docs: list[dict]) -> float:
    """COLLAB_DRAIN_S as the ConfigMap sets it."""
    return float(one(docs, "ConfigMap", "collab-config")["data"]["COLLAB_DRAIN_S"])


def selects(selector: dict, labels: dict) -> bool:
    """Whether a matchLabels selector picks pods with these labels."""
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


# Kustomize


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_kustomization_renders_objects_that_kubernetes_1_32_accepts(overlay):
    """Each of base and the overlays renders, and every object passes the 1.32 schema (unknown fields refused)."""
    docs = render(overlay)
    checked = 0
    for doc in docs:
        if doc["apiVersion"] in CRD_GROUPS:
            continue
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{overlay}: {doc['kind']} {doc['metadata']['name']}: {exc.message} at {list(exc.path)}")
        checked += 1
    assert checked >= 15
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(names) == len(set(names)), "an object is rendered twice"
    # base is namespace-less; an overlay puts everything in one namespace it creates
    namespaced = [d for d in docs if d["kind"] != "Namespace"]
    if overlay == "base":
        assert not find(docs, "Namespace") and all("namespace" not in d["metadata"] for d in namespaced)
    else:
        (namespace, ) = find(docs, "Namespace")
        assert {d["metadata"].get("namespace") for d in namespaced} == {namespace["metadata"]["name"]}


def test_the_validator_refuses_a_broken_object():
    """The schema check is real: a typo'd field and a wrong type are refused."""
    deployment = one(render("base"), "Deployment", "collab-api")
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    typo = yaml.safe_load(yaml.safe_dump(deployment))
    typo["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, K8S_VERSION, strict=True)


def test_api_pods_drain_before_they_stop():
    """Readiness is /readyz, and the grace period outlasts the preStop sleep plus COLLAB_DRAIN_S."""
    docs = render("base")
    api = one(docs, "Deployment", "collab-api")
    pod = api["spec"]["template"]["spec"]
    (container, ) = pod["containers"]
    assert container["command"][:2] == ["collab", "api"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    # the probes ask the port the process listens on (COLLAB_PORT)
    port = int(one(docs, "ConfigMap", "collab-config")["data"]["COLLAB_PORT"])
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named[container["readinessProbe"]["httpGet"]["port"]] == port
    sleep = container["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "sleep"
    assert pod["terminationGracePeriodSeconds"] > drain_s(docs) + float(sleep[1])
    assert api["spec"]["replicas"] >= 2
    assert api["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    for key in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][key])
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_api_is_autoscaled_on_cpu_and_served_through_the_ingress_without_affinity():
    """The HPA scales collab-api 2-10 on CPU; the Ingress reaches its Service with WebSocket timeouts, no affinity."""
    docs = render("base")
    hpa = one(docs, "HorizontalPodAutoscaler", "collab-api")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "collab-api"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]

    api_labels = one(docs, "Deployment", "collab-api")["spec"]["template"]["metadata"]["labels"]
    service = one(docs, "Service", "collab-api")
    assert selects({"matchLabels": service["spec"]["selector"]}, api_labels)
    (ingress, ) = find(docs, "Ingress")
    assert ingress["apiVersion"] == "networking.k8s.io/v1"
    notes = ingress["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/proxy-read-timeout"] == "3600"
    assert notes["nginx.ingress.kubernetes.io/proxy-send-timeout"] == "3600"
    assert not [k for k in notes if "affinity" in k]
    backends = [p["backend"]["service"] for r in ingress["spec"]["rules"] for p in r["http"]["paths"]]
    assert backends == [{"name": "collab-api", "port": {"name": service["spec"]["ports"][0]["name"]}}]


def test_one_worker_deployment_per_lane():
    """Every lane the code declares has its own worker Deployment running that lane, and no other exists."""
    docs = render("base")
    workers = {d["metadata"]["name"]: d for d in find(docs, "Deployment") if "worker" in d["metadata"]["name"]}
    assert set(workers) == {f"collab-worker-{lane}" for lane in LANES}
    for lane in LANES:
        (container, ) = workers[f"collab-worker-{lane}"]["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["collab", "worker", "--lane", lane]


def test_a_disruption_budget_covers_the_api_and_every_lane_and_still_lets_a_node_drain():
    """Each collab Deployment has a PDB of minAvailable 1 selecting its pods, with more replicas than that."""
    docs = render("base")
    budgets = find(docs, "PodDisruptionBudget")
    deployments = find(docs, "Deployment")
    assert {d["metadata"]["name"] for d in deployments} == {"collab-api"} | {f"collab-worker-{lane}" for lane in LANES}
    for deployment in deployments:
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        covering = [b for b in budgets if selects(b["spec"]["selector"], labels)]
        assert len(covering) == 1, deployment["metadata"]["name"]
        assert covering[0]["spec"]["minAvailable"] == 1
        assert deployment["spec"]["replicas"] > 1, f"{deployment['metadata']['name']}: a drain would wait forever"


def test_migrate_job_runs_collab_migrate():
    """The release step is a Job running `collab migrate` with the same settings as the servers."""
    docs = render("base")
    job = one(docs, "Job", "collab-migrate")
    (container, ) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["collab", "migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in {"OnFailure", "Never"}
    api = one(docs, "Deployment", "collab-api")["spec"]["template"]["spec"]["containers"][0]
    assert container["envFrom"] == api["envFrom"]
    assert env_of(container)["COLLAB_DATABASE_URL"] == env_of(api)["COLLAB_DATABASE_URL"]


def test_secrets_come_from_the_secret_and_settings_from_the_config_map():
    """Every collab container reads the secret key and URLs from collab-secrets, the rest from collab-config."""
    docs = render("base")
    config = one(docs, "ConfigMap", "collab-config")["data"]
    assert config["COLLAB_ENV"] == "production"
    assert "COLLAB_SECRET_KEY" not in config and "COLLAB_DATABASE_URL" not in config
    for owner, container in collab_containers(docs):
        assert container["envFrom"] == [{"configMapRef": {"name": "collab-config"}}], owner
        env = env_of(container)
        for name in ("COLLAB_SECRET_KEY", "COLLAB_DATABASE_URL", "COLLAB_REDIS_URL"):
            assert env[name]["valueFrom"]["secretKeyRef"] == {"name": "collab-secrets", "key": name}, (owner, name)
        assert container["image"].split(":")[0] == "collab"


def test_external_overlay_reads_an_optional_read_replica_url_from_the_secret():
    """overlays/external: search may read a replica named in the Secret; without the key nothing is set."""
    for owner, container in collab_containers(render("overlays/external")):
        if owner == "collab-migrate":
            continue
        ref = env_of(container)["COLLAB_DATABASE_READ_URL"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "collab-secrets", "key": "COLLAB_DATABASE_READ_URL", "optional": True}


def test_cnpg_overlay_runs_a_synchronous_postgres_18_cluster_with_pgvector():
    """overlays/cnpg: three instances, one synchronous standby, PG 18 with pgvector; collab uses its -rw and -ro."""
    docs = render("overlays/cnpg")
    (cluster, ) = find(docs, "Cluster")
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    spec = cluster["spec"]
    assert spec["instances"] == 3
    sync = spec["postgresql"].get("synchronous")
    if sync:
        assert sync["method"] in {"any", "first"} and sync["number"] >= 1
    else:
        assert spec["minSyncReplicas"] >= 1
    assert re.search(r":18[.-]", spec["imageName"]), spec["imageName"]
    extensions = [e["name"] for e in spec["postgresql"].get("extensions", [])]
    created = " ".join(spec["bootstrap"]["initdb"].get("postInitApplicationSQL", []))
    assert "pgvector" in extensions or re.search(r"create extension if not exists vector", created, re.I)
    assert "standard" in spec["imageName"] or "pgvector" in extensions  # the minimal images lack pgvector
    name = cluster["metadata"]["name"]
    for owner, container in collab_containers(docs):
        env = env_of(container)
        assert env["COLLAB_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": f"{name}-app", "key": "uri"}
        read_url = env["COLLAB_DATABASE_READ_URL"]["value"]
        assert read_url.startswith(f"postgresql://{spec['bootstrap']['initdb']['owner']}@{name}-ro:"), owner
        assert f"/{spec['bootstrap']['initdb']['database']}?" in read_url


def test_redis_sentinel_overlay_switches_collab_to_the_sentinels():
    """overlays/redis-sentinel: COLLAB_REDIS_URL is gone, COLLAB_REDIS_SENTINELS names each pod's Sentinel."""
    docs = render("overlays/redis-sentinel")
    for owner, container in collab_containers(docs):
        assert "COLLAB_REDIS_URL" not in env_of(container), owner
        assert container["envFrom"] == [{"configMapRef": {"name": "collab-config"}}]
    config = one(docs, "ConfigMap", "collab-config")["data"]
    redis = one(docs, "StatefulSet", "redis")
    service = one(docs, "Service", redis["spec"]["serviceName"])
    assert service["spec"]["clusterIP"] == "None"
    assert redis["spec"]["replicas"] == 3
    expected = [f"redis-{i}.{service['metadata']['name']}:26379" for i in range(3)]
    assert config["COLLAB_REDIS_SENTINELS"].split(",") == expected
    assert {p["port"] for p in service["spec"]["ports"]} == {6379, 26379}
    containers = {c["name"]: c for c in redis["spec"]["template"]["spec"]["containers"]}
    assert set(containers) == {"redis", "sentinel"}

    # the Sentinels run the compose file's sentinel.conf, and watch the master collab asks for
    files = redis_files(docs)
    assert directives(files["sentinel.conf"]) == directives((COMPOSE / "sentinel.conf").read_text())
    monitor = next(d for d in directives(files["sentinel.conf"]) if d.startswith("sentinel monitor "))
    assert monitor.split()[2] == config["COLLAB_REDIS_SENTINEL_MASTER"]
    assert "get-master-addr-by-name " + config["COLLAB_REDIS_SENTINEL_MASTER"] in files["redis.sh"]
    for flag in ("--appendonly yes", "--appendfsync everysec", "--maxmemory-policy noeviction"):
        assert flag in files["redis.sh"]


def test_both_components_combine_in_one_overlay(tmp_path):
    """An overlay of base + the cnpg and redis-sentinel components (everything in the cluster) renders and validates."""
    shutil.copytree(K8S, tmp_path / "k8s")
    both = tmp_path / "k8s" / "overlays" / "both"
    both.mkdir()
    (both / "kustomization.yaml").write_text(
        yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": "collab",
            "resources": ["../../base"], "components": ["../../components/cnpg", "../../components/redis-sentinel"]
        }))
    docs = list(_render(str(both)))
    for doc in docs:
        if doc["apiVersion"] not in CRD_GROUPS:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    assert find(docs, "Cluster") and find(docs, "StatefulSet", "redis")
    for _, container in collab_containers(docs):
        env = env_of(container)
        assert "COLLAB_REDIS_URL" not in env and env["COLLAB_DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "uri"


def redis_files(docs: list[dict]) -> dict[str, str]:
    """The Redis pods' files: the generated ConfigMap (its name carries a hash of its content)."""
    (files, ) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("collab-redis-")]
    return files["data"]


def sections(lines: list[str], keyword: str) -> dict[str, list[str]]:
    """An HAProxy config's `keyword NAME` sections (as directives), by name."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.split(" ", 1)[0] in ("global", "defaults", "frontend", "backend", "listen"):
            current = found.setdefault(line.split()[1], []) if line.startswith(keyword) else None
        elif current is not None:
            current.append(line)
    return found


def directives(conf: str) -> list[str]:
    """A Redis config file's directives, without comments and blank lines."""
    return [line.strip() for line in conf.splitlines() if line.strip() and not line.strip().startswith("#")]


# Settings named anywhere in the deployment files


def test_every_collab_setting_the_deploy_files_name_exists():
    """A COLLAB_* name in deploy/ or docs/several-machines.md is a real setting: a typo would be silently ignored."""
    files = [p for p in DEPLOY.rglob("*") if p.is_file()] + [ROOT / "docs" / "several-machines.md"]
    named: dict[str, set[str]] = {}
    for path in files:
        for name in re.findall(r"\bCOLLAB_[A-Z0-9_]*[A-Z0-9]", path.read_text()):
            named.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert "COLLAB_SECRET_KEY" in named and "COLLAB_REDIS_SENTINELS" in named
    unknown = {name: sorted(where) for name, where in named.items() if name not in SETTINGS | PLACEHOLDERS}
    assert not unknown, f"not settings of collab.config.Settings: {unknown}"


# Compose


def load_compose(*names: str) -> dict:
    """The compose files merged as `docker compose -f a -f b` does: maps merge, command and lists replace."""
    merged: dict = {}
    for name in names:
        merged = _merge(merged, yaml.safe_load((COMPOSE / name).read_text()))
    return merged


def _merge(base, override, key: str = ""):
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = _merge(base[k], v, k) if k in base else v
        return out
    if key in {"volumes", "ports"} and isinstance(base, list) and isinstance(override, list):
        # compose merges mounts by their target path and adds ports
        targets = {_target(v): v for v in base}
        targets.update({_target(v): v for v in override})
        return list(targets.values())
    return override


def _target(entry) -> str:
    return entry.split(":")[1] if isinstance(entry, str) and ":" in entry else str(entry)


def collab_services(compose: dict) -> dict[str, dict]:
    """The services built from the repository's Dockerfile."""
    return {name: s for name, s in compose["services"].items() if "build" in s}


def command_of(service: dict) -> list[str]:
    """A service's command as a list."""
    command = service.get("command", [])
    return command.split() if isinstance(command, str) else command


def seconds(value: str) -> float:
    """A compose duration ("30s", "1m30s") in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", value)
    assert parts and "".join(n + u for n, u in parts) == value, value
    return sum(float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for n, u in parts)


def test_compose_migrates_before_anything_serves():
    """migrate runs `collab migrate` once; every other collab service waits for it to complete successfully."""
    compose = load_compose("compose.yaml")
    services = collab_services(compose)
    migrate = services.pop("migrate")
    assert command_of(migrate) == ["collab", "migrate"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert len(services) >= 2 + len(LANES)
    for name, service in services.items():
        assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name


def test_compose_builds_collab_from_the_repository_with_one_required_secret():
    """Every collab service builds ../.. (the repo's Dockerfile), in production, with COLLAB_SECRET_KEY required."""
    compose = load_compose("compose.yaml")
    for name, service in compose["services"].items():
        assert service.get("image") or service.get("build"), f"{name} has neither image nor build"
    for name, service in collab_services(compose).items():
        context = (COMPOSE / service["build"]["context"]).resolve()
        assert context == ROOT and (context / service["build"]["dockerfile"]).is_file(), name
        env = service["environment"]
        assert env["COLLAB_ENV"] == "production"
        # `:?` makes compose refuse to start without it (an empty value too), instead of each process failing
        assert re.fullmatch(r"\$\{COLLAB_SECRET_KEY:\?[^}]+\}", env["COLLAB_SECRET_KEY"]), name
        assert env["COLLAB_DATABASE_URL"].startswith("postgresql://collab:${POSTGRES_PASSWORD")
        assert env["COLLAB_DATABASE_URL"].endswith("@postgres:5432/collab")
        assert env["COLLAB_REDIS_URL"] == "redis://redis:6379/0"
    text = (COMPOSE / "compose.yaml").read_text()
    assert "x-collab: &collab" in text
    example = (COMPOSE / ".env.example").read_text()
    for variable in set(re.findall(r"\$\{(\w+):\?", text)):
        assert re.search(rf"^{variable}=", example, re.M), f".env.example does not mention {variable}"


def test_compose_api_services_are_checked_on_readyz_and_outlive_the_drain():
    """api1 and api2 run `collab api --workers 2`, are healthy on /readyz only, publish no port, outlast the drain."""
    compose = load_compose("compose.yaml")
    for name in ("api1", "api2"):
        api = compose["services"][name]
        assert command_of(api) == ["collab", "api", "--workers", "2"]
        check = " ".join(api["healthcheck"]["test"])
        assert "/readyz" in check and "urllib" in check
        assert "ports" not in api, f"{name} must be reached through lb only"
        drain = float(api["environment"]["COLLAB_DRAIN_S"])
        assert seconds(api["stop_grace_period"]) > drain + 5


def test_compose_runs_a_worker_service_per_lane():
    """One service per lane the code declares, each with its replicas; the bulk lane (the crons) among them."""
    compose = load_compose("compose.yaml")
    lanes = {}
    for name, service in collab_services(compose).items():
        command = command_of(service)
        if command[:2] == ["collab", "worker"]:
            assert command[2] == "--lane", f"{name} runs every lane"
            lanes[command[3]] = service
    assert set(lanes) == set(LANES)
    for lane, service in lanes.items():
        assert service["deploy"]["replicas"] >= 1, lane


def test_compose_balancer_postgres_and_redis():
    """lb runs the shipped haproxy.cfg on 8080; Postgres 18 + pgvector and Redis (AOF, noeviction) keep volumes."""
    compose = load_compose("compose.yaml")
    services = compose["services"]
    lb = services["lb"]
    assert lb["image"] == "haproxy:2.8"
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in lb["volumes"]
    assert lb["environment"] == {"COLLAB_LB_BIND": ":8080", "COLLAB_API_1": "api1:8000", "COLLAB_API_2": "api2:8000"}
    assert any(str(p).endswith(":8080") for p in lb["ports"])
    # the API listens where the balancer sends (the image's COLLAB_PORT)
    image_port = re.search(r"COLLAB_PORT=(\d+)", (ROOT / "Dockerfile").read_text()).group(1)
    for key in ("COLLAB_API_1", "COLLAB_API_2"):
        host, port = lb["environment"][key].split(":")
        assert host in services and port == image_port

    postgres = services["postgres"]
    assert postgres["image"] == "pgvector/pgvector:pg18"
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]

    redis = services["redis"]
    assert redis["image"].split(":")[0] == "redis" and redis["image"].split(":")[1].startswith("7")
    command = " ".join(command_of(redis))
    for flag in ("--appendonly yes", "--appendfsync everysec", "--maxmemory-policy noeviction"):
        assert flag in command
    assert redis["volumes"][0].split(":")[0] in compose["volumes"]
    assert redis["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]


def test_compose_ha_override_adds_a_synchronous_standby_replicas_and_three_sentinels():
    """compose.ha.yaml: a standby the primary waits for, two Redis replicas, three Sentinels collab asks."""
    compose = load_compose("compose.yaml", "compose.ha.yaml")
    services = compose["services"]
    standby = services["postgres-standby"]
    assert standby["image"] == services["postgres"]["image"]
    script = " ".join(standby["entrypoint"])
    assert "pg_basebackup" in script and "--write-recovery-conf" in script
    name = re.search(r"application_name=(\w+)", script).group(1)
    primary = " ".join(command_of(services["postgres"]))
    assert f"synchronous_standby_names=FIRST 1 ({name})" in primary

    replicas = [s for n, s in services.items() if n.startswith("redis-replica-")]
    assert len(replicas) == 2
    for replica in replicas:
        assert command_of(replica)[1:4] == ["--replicaof", "redis", "6379"]
        assert "noeviction" in command_of(replica)

    sentinels = {n: s for n, s in services.items() if n.startswith("sentinel-")}
    assert len(sentinels) == 3
    for sentinel in sentinels.values():
        assert "./sentinel.conf:/etc/collab/sentinel.conf:ro" in sentinel["volumes"]
        host, port = sentinel["environment"]["COLLAB_REDIS_MASTER"].split()
        assert host in services and port == "6379"
        assert "redis-sentinel" in command_of(sentinel)[-1]

    for name, service in collab_services(compose).items():
        env = service["environment"]
        assert not env.get("COLLAB_REDIS_URL"), name
        assert env["COLLAB_REDIS_SENTINELS"].split(",") == [f"{s}:26379" for s in sorted(sentinels)]
        assert env["COLLAB_REDIS_SENTINEL_MASTER"] == "mymaster"
        url = env["COLLAB_DATABASE_URL"]
        assert "@postgres:5432,postgres-standby:5432/collab?" in url and "target_session_attrs=read-write" in url
        if name != "migrate":
            assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
        assert set(sentinels) <= set(service["depends_on"])
    monitor = next(d for d in directives((COMPOSE / "sentinel.conf").read_text()) if d.startswith("sentinel monitor"))
    assert monitor.split()[2] == "mymaster"


def test_compose_sentinel_command_fills_in_the_master(tmp_path):
    """The Sentinel services' shell command writes a config that monitors the master named in COLLAB_REDIS_MASTER."""
    sentinel = load_compose("compose.yaml", "compose.ha.yaml")["services"]["sentinel-1"]
    shell, flag, script = command_of(sentinel)
    assert (shell, flag) == ("sh", "-c")
    # compose turns $$ into $; then the script's paths point into tmp_path and it prints instead of serving
    script = script.replace("$$", "$").replace("/etc/collab/sentinel.conf", str(COMPOSE / "sentinel.conf"))
    script = script.replace("/tmp/sentinel.conf", str(tmp_path / "s.conf")).replace("exec redis-sentinel", "cat")
    env = {"PATH": os.environ["PATH"], **sentinel["environment"]}
    out = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=10, check=True).stdout
    assert "sentinel monitor mymaster redis 6379 2" in directives(out)
    assert "${" not in out.replace("# ", "")


def test_every_file_compose_mounts_is_shipped():
    """Each ./file a service mounts exists beside the compose files."""
    compose = load_compose("compose.yaml", "compose.ha.yaml")
    mounted = [v.split(":")[0] for s in compose["services"].values() for v in s.get("volumes", [])]
    local = [m for m in mounted if m.startswith("./")]
    assert {"./haproxy.cfg", "./sentinel.conf"} <= set(local)
    for path in local:
        assert (COMPOSE / path).is_file(), path


def test_compose_config_accepts_the_files_when_a_compose_tool_is_installed():
    """`docker-compose config -q` (or podman-compose) accepts both files; skipped without one."""
    tool = shutil.which("docker-compose") or shutil.which("podman-compose")
    if not tool:
        pytest.skip("neither docker-compose nor podman-compose is installed (not required)")
    env = {
        **os.environ, "COLLAB_SECRET_KEY": "x" * 48, "POSTGRES_PASSWORD": "pw", "POSTGRES_REPLICATION_PASSWORD": "rpw"
    }
    files = ["-f", str(COMPOSE / "compose.yaml"), "-f", str(COMPOSE / "compose.ha.yaml")]
    result = subprocess.run([tool, *files, "config", "-q"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    missing = {k: v for k, v in env.items() if k != "COLLAB_SECRET_KEY"}
    result = subprocess.run([tool, *files, "config", "-q"], env=missing, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "COLLAB_SECRET_KEY" in result.stderr


# HAProxy


def test_haproxy_config_balances_on_readiness_and_cuts_tunnels_of_a_node_marked_down():
    """leastconn, /readyz checks, an hour's tunnel timeout; plain requests in flight are never cut, WebSocket tunnels
    of a node out for good are (shutdown-sessions); every node at once failing sends to all; a drain noticed in
    time."""
    text = (COMPOSE / "haproxy.cfg").read_text()
    lines = directives(text)
    assert "timeout tunnel 1h" in lines
    assert "use_backend realtime if websocket" in lines and "default_backend api" in lines
    backends = sections(lines, "backend ")
    for name in ("api", "realtime"):
        backend = backends[name]
        assert {"balance leastconn", "option httpchk GET /readyz", "http-check expect status 200",
                "option allbackups"} <= set(backend), name
        # Every node checked, and every node again as a backup (taken when all fail their check).
        for n in (1, 2):
            assert f'server api{n} "${{COLLAB_API_{n}}}" check' in backend, name
            assert f'server api{n}-any "${{COLLAB_API_{n}}}" backup' in backend, name
    [defaults] = [line for line in backends["api"] if line.startswith("default-server ")]
    [realtime] = [line for line in backends["realtime"] if line.startswith("default-server ")]
    assert "shutdown-sessions" not in defaults  # a plain request in flight always finishes
    assert "on-marked-down shutdown-sessions" in realtime
    for placeholder in ("COLLAB_LB_BIND", "COLLAB_API_1", "COLLAB_API_2"):
        assert f'"${{{placeholder}}}"' in text
    assert not [line for line in lines if re.match(r"(cookie|stick|balance (source|uri))\b", line)]
    # a draining node answers 503 on /readyz for COLLAB_DRAIN_S: HAProxy must mark it down sooner
    words = defaults.split()
    inter = seconds(words[words.index("inter") + 1])
    fall = int(words[words.index("fall") + 1])
    compose_drain = float(load_compose("compose.yaml")["services"]["api1"]["environment"]["COLLAB_DRAIN_S"])
    assert inter * fall < compose_drain
    assert inter * fall < drain_s(render("base"))


def test_haproxy_accepts_the_shipped_config(tmp_path):
    """`haproxy -c` accepts haproxy.cfg with the environment compose gives it."""
    binary = haproxy()
    env = {
        "PATH": os.environ["PATH"], "COLLAB_LB_BIND": "127.0.0.1:8080", "COLLAB_API_1": "127.0.0.1:8001",
        "COLLAB_API_2": "127.0.0.1:8002"
    }
    result = subprocess.run([binary, "-c", "-f", str(COMPOSE / "haproxy.cfg")], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def run_pod_script(tmp_path: Path, script: str, *, host: str, master: str = "") -> str:
    """What a Redis pod's start script execs, as pod `host`, with the Sentinels naming `master` (or none)."""
    files = redis_files(render("overlays/redis-sentinel"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "sentinel").mkdir(exist_ok=True)
    (tmp_path / "sentinel.conf").write_text(files["sentinel.conf"])
    _stub(bin_dir, "hostname", f"echo {host}")
    _stub(bin_dir, "getent", "exit 0")
    # `redis-cli -h PEER -p 26379 sentinel get-master-addr-by-name mymaster`: the master's host, then its port
    _stub(bin_dir, "redis-cli", f'[ -n "{master}" ] || exit 1\necho {master}\necho 6379')
    _stub(bin_dir, "redis-server", 'echo redis-server "$@"')
    _stub(bin_dir, "redis-sentinel", 'cat "$1"')
    text = files[script].replace("/etc/collab/sentinel.conf", str(tmp_path / "sentinel.conf"))
    text = text.replace("/sentinel/sentinel.conf", str(tmp_path / "sentinel" / "sentinel.conf"))
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run(["sh", "-c", text], env=env, capture_output=True, text=True, timeout=30, check=True).stdout


def test_redis_pods_start_as_the_master_the_sentinels_name(tmp_path):
    """First start: redis-0 is the master and the others replicate it; after a failover a restarted pod follows."""
    assert "--replicaof" not in run_pod_script(tmp_path, "redis.sh", host="redis-0")
    first = run_pod_script(tmp_path, "redis.sh", host="redis-1")
    assert "--replicaof redis-0.redis 6379" in first and "--replica-announce-ip redis-1.redis" in first
    # redis-1 was promoted while redis-0 was away: redis-0 comes back as its replica, redis-1 stays the master
    assert "--replicaof redis-1.redis 6379" in run_pod_script(tmp_path, "redis.sh", host="redis-0",
                                                              master="redis-1.redis")
    assert "--replicaof" not in run_pod_script(tmp_path, "redis.sh", host="redis-1", master="redis-1.redis")


def test_redis_pods_sentinels_monitor_the_current_master(tmp_path):
    """Each pod's Sentinel runs the shared sentinel.conf with the master filled in, announcing the pod's name."""
    conf = directives(run_pod_script(tmp_path, "sentinel.sh", host="redis-2"))
    assert "sentinel monitor mymaster redis-0.redis 6379 2" in conf
    assert "sentinel announce-ip redis-2.redis" in conf and "sentinel announce-hostnames yes" in conf
    conf = directives(run_pod_script(tmp_path, "sentinel.sh", host="redis-0", master="redis-2.redis"))
    assert "sentinel monitor mymaster redis-2.redis 6379 2" in conf
