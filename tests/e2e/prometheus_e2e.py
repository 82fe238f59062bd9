#!/usr/bin/env python3
"""End-to-end test with a real Prometheus: every PromQL expression of the Grafana dashboard
returns data after a search.

Starts shardplan-server (127.0.0.1:0, --ready_file) and Prometheus (Debian package) on
loopback with a config generated from deploy/prometheus/prometheus.yml (target pointed at
the server's metrics port, 1 s scrape interval, the alert rules loaded), runs searches and
an evaluation with the CLI, waits (deadline-bounded polling) until Prometheus has scraped
them, then queries the HTTP API for each dashboard expression. Everything runs in a temp
dir and is stopped on exit.

Usage: prometheus_e2e.py SERVER_BIN CLI_BIN PROMETHEUS_BIN REPO_ROOT
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

# Grafana's built-in variables, as Grafana would expand them for a 1 h view.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "5s", "$__range": "1h"}

processes = []


def stop_all():
    for proc in reversed(processes):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until(what, predicate, seconds):
    """Polls `predicate` until it returns a truthy value or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.2)


def free_port():
    # Prometheus cannot report a port it picked itself, so take one the kernel just handed
    # out (retried below if someone grabs it first).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def query(prom, expr):
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        body = json.loads(http_get(url))
    except urllib.error.HTTPError as error:
        return {"status": "error", "error": error.read().decode()}
    return body


def start_server(server_bin, work):
    ready = work / "ready.json"
    log = open(work / "server.log", "w")
    proc = subprocess.Popen(
        [server_bin, "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
         f"--store={work / 'store.db'}", f"--ready_file={ready}"],
        stdout=log, stderr=subprocess.STDOUT)
    processes.append(proc)

    def ready_ports():
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        if ready.exists() and ready.stat().st_size > 0:
            try:
                return json.loads(ready.read_text())
            except json.JSONDecodeError:
                return None
        return None
    return wait_until("the server's ready file", ready_ports, 60)


def start_prometheus(prom_bin, work, repo, metrics_port):
    deploy = repo / "deploy" / "prometheus"
    config = yaml.safe_load((deploy / "prometheus.yml").read_text())
    config["global"]["scrape_interval"] = "1s"
    config["global"]["evaluation_interval"] = "1s"
    config["rule_files"] = [str(deploy / f) for f in config.get("rule_files", [])]
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == "shardplan"]
    assert jobs, "deploy/prometheus/prometheus.yml has no shardplan job"
    jobs[0]["static_configs"] = [{"targets": [f"127.0.0.1:{metrics_port}"]}]
    config["scrape_configs"] = jobs
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    for attempt in range(3):
        port = free_port()
        log = open(work / f"prometheus-{attempt}.log", "w")
        proc = subprocess.Popen(
            [prom_bin, f"--config.file={work / 'prometheus.yml'}",
             f"--storage.tsdb.path={work / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
             "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT)
        processes.append(proc)
        prom = f"http://127.0.0.1:{port}"

        def is_ready():
            if proc.poll() is not None:
                return "exited"
            try:
                return "ready" if http_get(f"{prom}/-/ready", timeout=1) else None
            except (urllib.error.URLError, ConnectionError, OSError):
                return None
        state = wait_until("Prometheus to become ready", is_ready, 60)
        if state == "ready":
            return prom
        print(f"prometheus exited (port {port} taken?), retrying:",
              (work / f"prometheus-{attempt}.log").read_text()[-500:], file=sys.stderr)
    raise RuntimeError("Prometheus did not start")


def run_cli(cli, *args):
    result = subprocess.run([cli, *args], capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise RuntimeError(f"shardplan {' '.join(args)} exited {result.returncode}: "
                           f"{result.stderr}")
    return result.stdout


def main(server_bin, cli, prom_bin, repo):
    repo = pathlib.Path(repo)
    work = pathlib.Path(tempfile.mkdtemp(prefix="shardplan-prom-e2e-"))
    try:
        ports = start_server(server_bin, work)
        server = f"127.0.0.1:{ports['grpc_port']}"
        prom = start_prometheus(prom_bin, work, repo, ports["metrics_port"])
        print(f"server {server}, metrics :{ports['metrics_port']}, prometheus {prom}")

        # The target is up before the search, so rates see the counters move.
        wait_until("Prometheus to scrape the server",
                   lambda: query(prom, 'up{job="shardplan"} == 1')["data"]["result"], 60)

        common = ["--server", server, "--model", "llama-3.1-8b", "--gpus", "8",
                  "--max-seconds", "20", "--deadline-seconds", "120", "--output", "json"]
        run_cli(cli, "plan", *common, "--method", "rl", "--max-evaluations", "300")
        run_cli(cli, "plan", *common, "--method", "random", "--max-evaluations", "100")
        run_cli(cli, "evaluate", "--server", server, "--model", "llama-3.1-8b", "--gpus", "8",
                "--tp", "8")
        bad = subprocess.run([cli, "plan", "--server", server, "--model", "nope", "--gpus", "8"],
                             capture_output=True, timeout=60)
        assert bad.returncode == 4, f"invalid model: exit {bad.returncode}"

        wait_until("the search's evaluations in Prometheus",
                   lambda: query(prom, "shardplan_cost_model_evaluations_total > 0")["data"]["result"],
                   60)
        wait_until("a finished search in Prometheus",
                   lambda: query(prom, "shardplan_search_duration_seconds_count > 0")["data"]["result"],
                   60)

        dashboard = json.loads((repo / "deploy/grafana/dashboards/shardplan.json").read_text())
        exprs = []
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                for var, value in GRAFANA_VARIABLES.items():
                    expr = expr.replace(var, value)
                exprs.append((panel["title"], expr))
        assert len(exprs) >= 10, f"only {len(exprs)} dashboard queries"

        failures = []
        for title, expr in exprs:
            def has_data(expr=expr):
                body = query(prom, expr)
                if body.get("status") != "success":
                    return None
                return body["data"]["result"] or None
            try:
                # Rates need two samples inside their window; allow a few scrapes.
                result = wait_until(f"data for {expr}", has_data, 30)
                print(f"ok   {title}: {expr} -> {len(result)} series, e.g. {result[0]['value'][1]}")
            except TimeoutError:
                body = query(prom, expr)
                failures.append(f"{title}: {expr} -> {json.dumps(body)[:300]}")

        # The alert rules loaded, and none of them fires on a healthy server.
        rules = json.loads(http_get(f"{prom}/api/v1/rules"))["data"]["groups"]
        names = {r["name"] for g in rules for r in g["rules"]}
        for alert in ["ShardplanServerDown", "ShardplanHighErrorRate", "ShardplanSearchesQueueing"]:
            if alert not in names:
                failures.append(f"alert rule {alert} not loaded")
        firing = [a["labels"]["alertname"] for a in
                  json.loads(http_get(f"{prom}/api/v1/alerts"))["data"]["alerts"]
                  if a["state"] == "firing"]
        if firing:
            failures.append(f"alerts firing on a healthy server: {firing}")

        for failure in failures:
            print("FAIL", failure)
        print(f"prometheus e2e: {len(exprs) - len(failures)}/{len(exprs)} dashboard queries "
              f"returned data; {'OK' if not failures else 'FAILED'}")
        return 1 if failures else 0
    finally:
        stop_all()
        if os.environ.get("SHARDPLAN_KEEP_E2E_DIR"):
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        sys.exit(main(*sys.argv[1:5]))
    except Exception as error:  # report, after the finally-block cleanup
        print(f"FAIL: {error}", file=sys.stderr)
        sys.exit(1)
