#!/usr/bin/env python3
"""Static checks of deploy/: every YAML and JSON file parses, and the manifests keep the
properties docs/operations.md promises (non-root, store on a volume, gRPC health probes,
scrape annotations, a dashboard querying the contract's metric names).

Usage: check_deploy.py REPO_ROOT. Exit 0 when all checks pass; prints each failure.
"""
import json
import pathlib
import re
import sys

import yaml

CONTRACT_METRICS = [
    "shardplan_plan_requests_total", "shardplan_evaluate_requests_total",
    "shardplan_active_searches", "shardplan_queued_searches",
    "shardplan_cost_model_evaluations_total", "shardplan_rl_iterations_total",
    "shardplan_search_best_speedup", "shardplan_search_evaluations",
    "shardplan_search_duration_seconds", "shardplan_time_to_first_plan_seconds",
    "shardplan_elite_store_plans", "shardplan_warm_starts_total",
]

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def main(root):
    deploy = pathlib.Path(root) / "deploy"
    docs = {}
    for path in sorted(deploy.rglob("*")):
        if path.suffix in (".yaml", ".yml"):
            try:
                docs[path.relative_to(deploy).as_posix()] = [
                    d for d in yaml.safe_load_all(path.read_text()) if d is not None]
            except yaml.YAMLError as error:
                failures.append(f"{path}: invalid YAML: {error}")
        elif path.suffix == ".json":
            try:
                docs[path.relative_to(deploy).as_posix()] = [json.loads(path.read_text())]
            except json.JSONDecodeError as error:
                failures.append(f"{path}: invalid JSON: {error}")
    for required in ["docker-compose.yaml", "prometheus/prometheus.yml", "prometheus/alerts.yml",
                     "kubernetes/deployment.yaml", "kubernetes/service.yaml",
                     "kubernetes/pvc.yaml", "grafana/dashboards/shardplan.json",
                     "grafana/provisioning/datasources/prometheus.yaml",
                     "grafana/provisioning/dashboards/shardplan.yaml"]:
        check(required in docs, f"deploy/{required} missing or unparsable")
    if failures:
        return

    # Kubernetes: gRPC probes, non-root, store on the PVC, scrape annotations.
    deployment = docs["kubernetes/deployment.yaml"][0]
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    check("grpc" in container.get("readinessProbe", {}), "deployment: readinessProbe is not grpc")
    check("grpc" in container.get("livenessProbe", {}), "deployment: livenessProbe is not grpc")
    check(pod["spec"]["securityContext"].get("runAsNonRoot") is True, "deployment: not runAsNonRoot")
    check(any(a.startswith("--grpc_address=0.0.0.0") for a in container["args"]),
          "deployment: server must listen on 0.0.0.0 in a pod")
    claim = [v for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]
    check(claim and claim[0]["persistentVolumeClaim"]["claimName"] ==
          docs["kubernetes/pvc.yaml"][0]["metadata"]["name"], "deployment: store not on the PVC")
    check(pod["metadata"]["annotations"].get("prometheus.io/scrape") == "true",
          "deployment: no prometheus.io/scrape annotation")
    for name in ["deployment.yaml", "service.yaml", "pvc.yaml"]:
        check(name in (docs["kubernetes/kustomization.yaml"][0]["resources"]),
              f"kustomization.yaml does not list {name}")

    # Dockerfile: multi-stage bookworm, non-root, volume, loopback overridden.
    dockerfile = (deploy / "Dockerfile").read_text()
    check(len(re.findall(r"^FROM debian:bookworm", dockerfile, re.M)) >= 2,
          "Dockerfile: not a multi-stage debian:bookworm build")
    check(re.search(r"^USER (?!root|0\b)", dockerfile, re.M) is not None, "Dockerfile: runs as root")
    check("VOLUME" in dockerfile, "Dockerfile: no VOLUME for the store")
    check("--grpc_address=0.0.0.0:50051" in dockerfile, "Dockerfile: server left on loopback")

    # docker-compose: the files it mounts exist.
    compose = docs["docker-compose.yaml"][0]
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                check((deploy / source).exists(), f"docker-compose mounts missing {source}")
    check(set(compose["services"]) >= {"shardplan-server", "prometheus", "grafana"},
          "docker-compose: needs shardplan-server, prometheus and grafana")

    # Dashboard: every panel queries something, and every contract metric is shown.
    dashboard = docs["grafana/dashboards/shardplan.json"][0]
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= 10, f"dashboard: only {len(exprs)} queries")
    for p in dashboard["panels"]:
        if p["type"] != "row":
            check(p.get("targets"), f"dashboard panel '{p['title']}' has no query")
    for metric in CONTRACT_METRICS:
        check(any(metric in e for e in exprs), f"dashboard does not show {metric}")
    datasource_uid = docs["grafana/provisioning/datasources/prometheus.yaml"][0]["datasources"][0]["uid"]
    for p in dashboard["panels"]:
        if "datasource" in p:
            check(p["datasource"]["uid"] == datasource_uid,
                  f"dashboard panel '{p['title']}' uses another datasource")

    # Prometheus: scrape job and the three alert families docs/operations.md names.
    prom = docs["prometheus/prometheus.yml"][0]
    check(any(j["job_name"] == "shardplan" for j in prom["scrape_configs"]),
          "prometheus.yml: no shardplan job")
    alerts = {r["alert"] for g in docs["prometheus/alerts.yml"][0]["groups"] for r in g["rules"]}
    for alert in ["ShardplanServerDown", "ShardplanHighErrorRate", "ShardplanSearchesQueueing"]:
        check(alert in alerts, f"alerts.yml: no {alert}")

    # systemd unit: runs the server, not as root.
    unit = (deploy / "systemd" / "shardplan-server.service").read_text()
    check("ExecStart=" in unit and "shardplan-server" in unit, "systemd unit: no ExecStart")
    check("DynamicUser=yes" in unit or re.search(r"^User=(?!root)", unit, re.M),
          "systemd unit: runs as root")

    check_postgres(deploy, docs)


def check_postgres(deploy, docs):
    """H-pg: N replicas on a shared PostgreSQL store (kubernetes/postgres/, compose)."""
    for required in ["kubernetes/postgres/kustomization.yaml",
                     "kubernetes/postgres/deployment.yaml",
                     "kubernetes/postgres/service.yaml",
                     "kubernetes/postgres/secret.example.yaml",
                     "docker-compose.postgres.yaml", "prometheus/prometheus-replicas.yml"]:
        check(required in docs, f"deploy/{required} missing or unparsable")
    if failures:
        return
    kustomization = docs["kubernetes/postgres/kustomization.yaml"][0]
    for name in ["deployment.yaml", "service.yaml"]:
        check(name in kustomization["resources"],
              f"kubernetes/postgres/kustomization.yaml does not list {name}")
    check("secret.example.yaml" not in kustomization["resources"],
          "kubernetes/postgres: the example Secret must not be applied")
    deployment = docs["kubernetes/postgres/deployment.yaml"][0]
    check(deployment["spec"]["replicas"] >= 2, "postgres deployment: fewer than 2 replicas")
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    check("--store=$(SHARDPLAN_STORE_URL)" in container["args"],
          "postgres deployment: --store is not $(SHARDPLAN_STORE_URL)")
    secret = docs["kubernetes/postgres/secret.example.yaml"][0]
    env = {e["name"]: e for e in container.get("env", [])}
    ref = env.get("SHARDPLAN_STORE_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(ref.get("name") == secret["metadata"]["name"] and ref.get("key") in secret["stringData"],
          "postgres deployment: SHARDPLAN_STORE_URL not from the Secret")
    check(secret["stringData"][ref.get("key", "url")].startswith("postgresql://"),
          "postgres Secret: url is not a postgresql:// URI")
    check(not any("persistentVolumeClaim" in v for v in pod["spec"].get("volumes", [])),
          "postgres deployment: replicas must not share a PVC")
    check(pod["spec"]["securityContext"].get("runAsNonRoot") is True,
          "postgres deployment: not runAsNonRoot")
    check("grpc" in container.get("readinessProbe", {}),
          "postgres deployment: readinessProbe is not grpc")
    service = docs["kubernetes/postgres/service.yaml"][0]
    check(service["spec"]["selector"] == pod["metadata"]["labels"],
          "postgres service does not select the replicas")
    compose = docs["docker-compose.postgres.yaml"][0]
    check(set(compose["services"]) >= {"postgres", "shardplan-server"},
          "docker-compose.postgres: needs postgres and shardplan-server")
    server = compose["services"]["shardplan-server"]
    check(server.get("deploy", {}).get("replicas", 1) >= 2,
          "docker-compose.postgres: fewer than 2 replicas")
    check(any(str(c).startswith("--store=postgresql://") for c in server.get("command", [])),
          "docker-compose.postgres: server not pointed at PostgreSQL")
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                check((deploy / source).exists(),
                      f"docker-compose.postgres mounts missing {source}")


if __name__ == "__main__":
    main(sys.argv[1])
    for failure in failures:
        print("FAIL:", failure)
    print("deploy checks:", "OK" if not failures else f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
