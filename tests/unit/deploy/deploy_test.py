#!/usr/bin/env python3
"""Checks the files in deploy/ without running them.

* Every PromQL expression in the alert rules and the Grafana dashboard names
  only series the code exports (the list comes from zkfleet_metric_names,
  which scrapes real broker and worker metric sets), plus Prometheus' `up`.
* The dashboard is valid, importable JSON with the panels operators need.
* Every alert has a firing and a not-firing case in alerts_test.yml.
* The systemd units and Kubernetes manifests parse and carry the fields the
  drain-on-stop design depends on, with stop timeouts covering the drain.
* The broker's journal (--data-dir, issue 13) is on storage that outlives the
  process: systemd's StateDirectory=, a Kubernetes StatefulSet's persistent
  volume claim.
* CURVE everywhere (issue 14): the broker gets --curve-secret-key and
  --allow-dir, workers and zkctl drains --curve-secret-key and
  --broker-public-key; `systemctl reload zkbroker` sends SIGHUP; Secret
  volumes are mounted 0400/0600; no deploy file says --insecure-plaintext.
* A key per worker: systemd instances and the Kubernetes StatefulSet's pods
  each read their own (the broker counts strikes and holds FAULTED per key).

Environment: ZKFLEET_SOURCE_DIR, ZKFLEET_METRIC_NAMES (set by ctest).
Fails (exit 1, with the reason) without python3-yaml: scripts/install-deps.sh
installs it, so its absence is a broken install, not a reason to skip.
"""
import functools
import json
import os
import re
import subprocess
import sys
import unittest

try:
    import yaml
except ImportError:
    print("FAILED: python3-yaml is not installed; run ./scripts/install-deps.sh ('apt-get install python3-yaml')",
          file=sys.stderr)
    sys.exit(1)

SOURCE_DIR = os.environ.get("ZKFLEET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEPLOY = os.path.join(SOURCE_DIR, "deploy")
NAMES_TOOL = os.environ.get("ZKFLEET_METRIC_NAMES", "")

# Measured: releasing a 96 GiB pinned pool takes about 14 s (memory-lifecycle
# work). Stop timeouts must cover --drain-timeout plus twice the release time
# of the largest supported pool.
RELEASE_SECONDS_PER_GIB = 14.0 / 96.0
LARGEST_POOL_GIB = 512
RELEASE_MARGIN = 2.0

PROMQL_FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time",
    "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "day_of_month",
    "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "exp", "floor", "histogram_quantile",
    "holt_winters", "hour", "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln",
    "log10", "log2", "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
    "present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh",
    "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time",
    "timestamp", "vector", "year",
    # aggregations
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile",
}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset",
                   "bool", "atan2", "inf", "nan"}


@functools.lru_cache(maxsize=None)
def exported_series():
    """Series names a broker and a worker serve, from zkfleet_metric_names."""
    if not NAMES_TOOL:
        raise AssertionError("ZKFLEET_METRIC_NAMES not set: run through ctest, which points it at zkfleet_metric_names")
    out = subprocess.run([NAMES_TOOL], check=True, capture_output=True, text=True, timeout=60).stdout
    names = frozenset(out.split())
    assert any(n.startswith("zkfleet_") for n in names), "zkfleet_metric_names printed no zkfleet metric"
    return names


def metric_names(expr):
    """The metric names a PromQL expression reads. Raises on an unknown function."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)            # string literals (label values, regexes)
    e = re.sub(r"'(?:[^'\\]|\\.)*'", "''", e)
    e = re.sub(r"\{[^}]*\}", " ", e)                          # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                         # range selectors ([5m], [$__rate_interval])
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)  # label lists
    names = set()
    for m in re.finditer(r"(?<![\w$.:])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if word in PROMQL_KEYWORDS:
            continue
        if call:
            if word not in PROMQL_FUNCTIONS:
                raise AssertionError(f"unknown PromQL function {word!r} in {expr!r}")
            continue
        names.add(word)
    return names


def load_yaml_documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def parse_systemd_unit(path):
    """{section: {key: [values]}}; continuation lines joined, comments dropped."""
    sections, current, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if pending:
                line = pending + " " + line.strip()
                pending = ""
            if line.endswith("\\"):
                pending = line[:-1].rstrip()
                continue
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("[") and stripped.endswith("]"):
                current = sections.setdefault(stripped[1:-1], {})
                continue
            key, sep, value = stripped.partition("=")
            if not sep or current is None:
                raise AssertionError(f"{path}: not a key=value line: {stripped!r}")
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def parse_env_file(path):
    values = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                values[key] = value
    return values


def deploy_files():
    """Every file under deploy/ (relative path, text)."""
    for root, _, files in os.walk(DEPLOY):
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, errors="replace") as f:
                yield os.path.relpath(path, DEPLOY), f.read()


def required_stop_seconds(drain_timeout_s):
    return drain_timeout_s + RELEASE_MARGIN * LARGEST_POOL_GIB * RELEASE_SECONDS_PER_GIB


class MetricNameParserTest(unittest.TestCase):
    """The PromQL scanner itself: it must find what it is used to check."""

    def test_finds_metrics_and_skips_functions_labels_and_ranges(self):
        expr = ('histogram_quantile(0.95, sum by (le, circuit) (rate(foo_bucket{phase="msm", x=~"$c"}'
                '[$__rate_interval]))) > on(instance) bar and up == 0 or vector(0)')
        self.assertEqual(metric_names(expr), {"foo_bucket", "bar", "up"})

    def test_unknown_function_is_an_error(self):
        with self.assertRaises(AssertionError):
            metric_names("rates(foo[5m])")


class AlertRulesTest(unittest.TestCase):
    REQUIRED = {
        "ZkfleetBacklogTooOld", "ZkfleetNoProgress", "ZkfleetFailureRatioHigh", "ZkfleetJobsDeadLettered",
        "ZkfleetDrainOverBudget", "ZkfleetWorkerWaitingForMemory", "ZkfleetWorkerLost",
        # The broker's journal and admission limits (issue 13).
        "ZkfleetBrokerRefusingSubmits", "ZkfleetBrokerLiveWitnessBytesHigh", "ZkfleetJobsExpiring",
        "ZkfleetBrokerRestarted", "ZkfleetBrokerJournalSlow",
        # CURVE handshakes refused (issue 14); gRPC callers refused (issue 49).
        "ZkfleetAuthRejections", "ZkfleetGrpcCallsRefused",
    }
    # page: someone is woken; ticket: looked at in working hours; info: a
    # record (a broker restart), no notification.
    SEVERITIES = {"page", "ticket", "info"}

    @classmethod
    def setUpClass(cls):
        cls.exported = exported_series()
        (rules,) = load_yaml_documents(os.path.join(DEPLOY, "prometheus", "alerts.yml"))
        cls.rules = [r for g in rules["groups"] for r in g["rules"]]
        (cls.tests,) = load_yaml_documents(os.path.join(DEPLOY, "prometheus", "alerts_test.yml"))

    def test_required_alerts_exist(self):
        names = {r["alert"] for r in self.rules if "alert" in r}
        self.assertLessEqual(self.REQUIRED, names)

    def test_rules_use_only_exported_metrics(self):
        for rule in self.rules:
            used = metric_names(rule["expr"])
            self.assertTrue(used, rule["alert"])
            unknown = used - self.exported - {"up"}
            self.assertFalse(unknown, f"{rule['alert']} reads metrics the code does not export: {sorted(unknown)}")

    def test_rules_have_severity_and_runbook(self):
        for rule in self.rules:
            self.assertIn(rule["labels"]["severity"], self.SEVERITIES, rule["alert"])
            anchor = rule["annotations"]["runbook_url"].split("#")[1]
            self.assertEqual(anchor, rule["alert"].lower(), rule["alert"])

    def test_every_alert_is_tested_firing_and_not_firing(self):
        firing, silent = set(), set()
        for case in self.tests["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else silent).add(check["alertname"])
        for rule in self.rules:
            self.assertIn(rule["alert"], firing, "no alerts_test.yml case where it fires")
            self.assertIn(rule["alert"], silent, "no alerts_test.yml case where it stays silent")

    def test_runbooks_exist_in_operations_doc(self):
        with open(os.path.join(SOURCE_DIR, "docs", "operations.md")) as f:
            doc = f.read()
        for rule in self.rules:
            self.assertIn("### " + rule["alert"], doc, "docs/operations.md has no section for it")


class PrometheusConfigTest(unittest.TestCase):
    def check_config(self, name):
        (config,) = load_yaml_documents(os.path.join(DEPLOY, "prometheus", name))
        self.assertIn("alerts.yml", config["rule_files"])
        jobs = {job["job_name"]: job for job in config["scrape_configs"]}
        # alerts.yml matches up{job=...} on these names.
        self.assertLessEqual({"zkfleet-broker", "zkfleet-worker"}, set(jobs))
        return jobs

    def test_static_config(self):
        jobs = self.check_config("prometheus.yml")
        self.assertTrue(jobs["zkfleet-broker"]["static_configs"][0]["targets"])
        self.assertTrue(jobs["zkfleet-worker"]["file_sd_configs"][0]["files"])

    def test_kubernetes_config_keeps_the_pods_of_the_manifests(self):
        jobs = self.check_config("prometheus-kubernetes.yml")
        for job in ("zkfleet-broker", "zkfleet-worker"):
            keeps = [r["regex"] for r in jobs[job]["relabel_configs"] if r.get("action") == "keep"]
            self.assertIn(job, keeps)
            self.assertIn("metrics", keeps)


class GrafanaDashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exported = exported_series()
        with open(os.path.join(DEPLOY, "grafana", "zkfleet.json")) as f:
            cls.dashboard = json.load(f)  # valid JSON, or the whole class fails
        cls.panels = [p for p in cls.dashboard["panels"] if p["type"] != "row"]

    def test_importable_shape(self):
        d = self.dashboard
        for key in ("title", "uid", "schemaVersion", "panels", "templating"):
            self.assertIn(key, d)
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids must be unique")
        variables = {v["name"]: v for v in d["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        for p in self.panels:
            for key in ("gridPos", "targets", "title", "datasource"):
                self.assertIn(key, p, p.get("title"))
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])

    def test_every_panel_query_names_exported_metrics(self):
        for p in self.panels:
            self.assertTrue(p["targets"], p["title"])
            for t in p["targets"]:
                used = metric_names(t["expr"])
                self.assertTrue(any(n.startswith("zkfleet_") for n in used), f"{p['title']}: {t['expr']}")
                unknown = used - self.exported
                self.assertFalse(unknown, f"panel {p['title']!r} queries metrics the code does not export: "
                                          f"{sorted(unknown)}")

    def test_variable_queries_name_exported_metrics(self):
        for v in self.dashboard["templating"]["list"]:
            if v["type"] != "query":
                continue
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", v["definition"])
            self.assertTrue(m, v["definition"])
            self.assertIn(m.group(1), self.exported)

    def test_required_views(self):
        exprs = " ".join(t["expr"] for p in self.panels for t in p["targets"])
        heatmaps = [p for p in self.panels if p["type"] == "heatmap"]
        self.assertGreaterEqual(len(heatmaps), 5)
        for p in heatmaps:
            (target,) = p["targets"]
            self.assertEqual(target["format"], "heatmap")
            self.assertIn("_bucket", target["expr"])
            self.assertIn("by (le)", target["expr"])
        heat_phases = {re.search(r'phase="(\w+)"', p["targets"][0]["expr"]).group(1) for p in heatmaps}
        self.assertLessEqual({"queue_wait", "witness_transfer", "ntt", "msm", "prove_total"}, heat_phases)
        for needed in ("zkfleet_jobs_completed_total", "zkfleet_queue_depth", "zkfleet_worker_state",
                       "zkfleet_broker_workers", "zkfleet_pinned_pool_bytes", "zkfleet_pinned_pool_in_use_bytes",
                       "zkfleet_broker_live_items", "zkfleet_broker_live_witness_bytes",
                       "zkfleet_broker_submits_refused_busy_total", "zkfleet_broker_journal_commit_seconds_bucket",
                       "zkfleet_broker_epoch", "zkfleet_broker_auth_rejected_total",
                       "zkfleet_broker_requests_forbidden_total"):
            self.assertIn(needed, exprs)


    def test_every_alert_has_a_panel(self):
        """An operator paged by an alert finds its metric on the dashboard."""
        exprs = " ".join(t["expr"] for p in self.panels for t in p["targets"])
        with open(os.path.join(DEPLOY, "prometheus", "alerts.yml")) as f:
            alerts = yaml.safe_load(f)
        for group in alerts["groups"]:
            for rule in group["rules"]:
                for name in set(re.findall(r"\bzkfleet_\w+", rule["expr"])):
                    self.assertIn(name, exprs, f"alert {rule['alert']} watches {name}, which no panel shows")


class SystemdUnitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = os.path.join(DEPLOY, "systemd")
        cls.broker = parse_systemd_unit(os.path.join(d, "zkbroker.service"))
        cls.worker = parse_systemd_unit(os.path.join(d, "zkworker@.service"))
        cls.worker_env = parse_env_file(os.path.join(d, "worker.env"))
        cls.instance_env = parse_env_file(os.path.join(d, "worker-gpu0.env"))
        cls.broker_env = parse_env_file(os.path.join(d, "broker.env"))

    def test_broker_unit(self):
        s = self.broker["Service"]
        self.assertIn("zkbroker", s["ExecStart"][0])
        self.assertIn("--metrics-listen", s["ExecStart"][0])
        self.assertEqual(s["Restart"], ["on-failure"])
        # A configuration error (2) and a damaged journal (65, zkbroker's own exit) are not retried.
        self.assertEqual(s["RestartPreventExitStatus"], ["2 65"])
        self.assertIn("return 65;", open(os.path.join(SOURCE_DIR, "cmd", "zkbroker", "main.cpp")).read())
        self.assertTrue(s["EnvironmentFile"])
        self.assertEqual(s["KillSignal"], ["SIGTERM"])
        self.assertIn("multi-user.target", self.broker["Install"]["WantedBy"])
        for var in re.findall(r"\$\{?(\w+)\}?", s["ExecStart"][0]):
            self.assertIn(var, self.broker_env, f"ExecStart uses {var}, broker.env does not set it")

    def test_broker_journal_in_the_state_directory(self):
        s = self.broker["Service"]
        (state_dir,) = s["StateDirectory"]
        # The journal holds live jobs' witnesses: not world-readable.
        self.assertEqual(s.get("StateDirectoryMode"), ["0700"])
        # --data-dir given once, in ExecStart or through a broker.env variable
        # it uses, and naming the directory systemd creates and keeps.
        (start,) = s["ExecStart"]
        expanded = re.sub(r"\$\{?(\w+)\}?", lambda m: self.broker_env.get(m.group(1), m.group(0)), start)
        data_dirs = re.findall(r"--data-dir[= ](\S+)", expanded)
        self.assertEqual(len(data_dirs), 1, f"--data-dir must be given exactly once: {expanded}")
        self.assertEqual(os.path.normpath(data_dirs[0]), os.path.join("/var/lib", state_dir))

    def test_worker_reload_sends_sighup(self):
        # `systemctl reload zkworker@X` rereads the worker's circuits (SIGHUP).
        (reload,) = self.worker["Service"]["ExecReload"]
        self.assertRegex(reload, r"kill -HUP \$MAINPID")

    def test_worker_stop_drains_through_zkctl_and_waits(self):
        s = self.worker["Service"]
        (start,) = s["ExecStart"]
        (stop,) = s["ExecStop"]
        worker_id = re.search(r"--id (\S+)", start).group(1)
        self.assertIn("zkctl", stop)
        self.assertRegex(stop, r"\bdrain " + re.escape(worker_id) + r" --wait\b")
        self.assertIn("--metrics-listen", start)
        self.assertEqual(s["KillSignal"], ["SIGTERM"])  # the worker drains on SIGTERM as well
        self.assertEqual(s["KillMode"], ["mixed"])
        self.assertEqual(s["Restart"], ["on-failure"])
        self.assertEqual(s["RestartPreventExitStatus"], ["2"])  # a mistyped --circuit is not retried every 5 s
        self.assertEqual(len(s["EnvironmentFile"]), 2)
        env = dict(self.worker_env, **self.instance_env)
        for var in re.findall(r"\$\{?(\w+)\}?", start + " " + stop):
            if var != "MAINPID":
                self.assertIn(var, env, f"the unit uses {var}, worker.env / worker-gpu0.env do not set it")

    def expand(self, text, env):
        return re.sub(r"\$\$?\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), text)

    def test_broker_curve_keys_and_reload(self):
        s = self.broker["Service"]
        (start,) = s["ExecStart"]
        expanded = self.expand(start, self.broker_env)
        secret = re.findall(r"--curve-secret-key[= ](\S+)", expanded)
        allow = re.findall(r"--allow-dir[= ](\S+)", expanded)
        self.assertEqual(len(secret), 1, expanded)
        self.assertEqual(len(allow), 1, expanded)
        self.assertTrue(secret[0].startswith("/etc/zkfleet/keys/") and secret[0].endswith(".secret"), secret)
        self.assertTrue(allow[0].startswith("/etc/zkfleet/keys/"), allow)
        # `systemctl reload zkbroker` rereads the allow-lists (SIGHUP).
        self.assertIn("ExecReload", s, "`systemctl reload zkbroker` must send SIGHUP")
        (reload,) = s["ExecReload"]
        self.assertRegex(reload, r"kill -HUP \$MAINPID")

    def test_worker_curve_keys(self):
        s = self.worker["Service"]
        env = dict(self.worker_env, **self.instance_env)
        (start,) = s["ExecStart"]
        (stop,) = s["ExecStop"]
        start, stop = self.expand(start, env), self.expand(stop, env)
        for cmd in (start, stop):
            self.assertRegex(cmd, r"--curve-secret-key[= ]\"?/etc/zkfleet/keys/\S+\.secret")
            self.assertRegex(cmd, r"--broker-public-key[= ]\"?/etc/zkfleet/keys/\S+\.pub")
        # The drain speaks on the client port: a client key, not the worker's.
        worker_key = re.search(r"--curve-secret-key[= ](\S+)", start).group(1)
        drain_key = re.search(r"--curve-secret-key[= ]\"?([^\s\"]+)", stop).group(1)
        self.assertNotEqual(worker_key, drain_key)

    def test_worker_stop_timeout_covers_drain_and_release(self):
        timeout = float(self.worker["Service"]["TimeoutStopSec"][0])
        drain_timeout = float(self.worker_env["ZKFLEET_DRAIN_TIMEOUT_S"])
        self.assertGreaterEqual(timeout, required_stop_seconds(drain_timeout))


class KubernetesManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = os.path.join(DEPLOY, "kubernetes")
        cls.objects = {}
        for name in sorted(os.listdir(d)):
            if name.endswith((".yaml", ".yml")):
                for doc in load_yaml_documents(os.path.join(d, name)):
                    for key in ("apiVersion", "kind", "metadata"):
                        assert key in doc, f"{name}: a document without {key}"
                    cls.objects[(doc["kind"], doc["metadata"]["name"])] = doc
        # The Secrets' shapes (placeholders), kept out of `kubectl apply -f
        # deploy/kubernetes/` in a subdirectory.
        cls.example_secrets = {}
        keys_dir = os.path.join(d, "keys")
        for name in sorted(os.listdir(keys_dir)):
            if name.endswith((".yaml", ".yml")):
                for doc in load_yaml_documents(os.path.join(keys_dir, name)):
                    assert doc["kind"] == "Secret", f"keys/{name}: only Secrets belong there"
                    cls.example_secrets[doc["metadata"]["name"]] = doc
        cls.config = cls.objects[("ConfigMap", "zkfleet-config")]["data"]

    def get(self, kind, name):
        self.assertIn((kind, name), self.objects, f"no {kind} {name}")
        return self.objects[(kind, name)]

    @staticmethod
    def container(deployment):
        (c,) = deployment["spec"]["template"]["spec"]["containers"]
        return c

    def test_broker_statefulset_and_service(self):
        # A StatefulSet of one: its pod keeps its journal volume, and a
        # rollout removes the old pod before starting the new one.
        self.assertNotIn(("Deployment", "zkfleet-broker"), self.objects)
        broker = self.get("StatefulSet", "zkfleet-broker")
        self.assertEqual(broker["spec"]["replicas"], 1)
        self.assertEqual(broker["spec"]["updateStrategy"]["type"], "RollingUpdate")
        self.assertNotEqual(broker["spec"].get("podManagementPolicy"), "Parallel")
        labels = broker["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(broker["spec"]["selector"]["matchLabels"].items(), labels.items())
        c = self.container(broker)
        self.assertTrue(any(a.startswith("--metrics-listen") for a in c["args"]))
        service = self.get("Service", "zkfleet-broker")
        self.assertLessEqual(service["spec"]["selector"].items(), labels.items())
        ports = {p["name"]: p for p in c["ports"]}
        for p in service["spec"]["ports"]:
            self.assertIn(p["targetPort"], ports)
        # The workers and zkctl reach the broker through this Service.
        self.assertIn("zkfleet-broker:5556", self.config["ZKFLEET_BROKER_WORKERS"])
        self.assertIn("zkfleet-broker:5555", self.config["ZKFLEET_BROKER_CLIENTS"])
        # The StatefulSet's governing Service: headless, selecting the broker.
        headless = self.get("Service", broker["spec"]["serviceName"])
        self.assertEqual(headless["spec"]["clusterIP"], "None")
        self.assertLessEqual(headless["spec"]["selector"].items(), labels.items())

    def test_broker_journal_on_a_persistent_volume(self):
        broker = self.get("StatefulSet", "zkfleet-broker")
        c = self.container(broker)
        data_dirs = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--data-dir=")]
        self.assertEqual(len(data_dirs), 1, "the broker needs exactly one --data-dir=")
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
        self.assertIn(data_dirs[0], mounts, "--data-dir is not a mounted volume")
        mount = mounts[data_dirs[0]]
        self.assertFalse(mount.get("readOnly", False))
        # The volume comes from a claim template (one PVC per pod, kept across
        # restarts and reschedules), not an emptyDir or a pod volume.
        claims = {t["metadata"]["name"]: t for t in broker["spec"].get("volumeClaimTemplates", [])}
        self.assertIn(mount["name"], claims, "the journal's volume is not a volumeClaimTemplate")
        pod_volumes = {v["name"] for v in broker["spec"]["template"]["spec"].get("volumes", [])}
        self.assertNotIn(mount["name"], pod_volumes)
        claim = claims[mount["name"]]["spec"]
        self.assertIn("ReadWriteOnce", claim["accessModes"])
        self.assertTrue(claim["resources"]["requests"]["storage"])

    def test_worker_statefulset(self):
        # A StatefulSet: stable pod names, so each pod has its own CURVE key
        # (test_worker_key_per_pod).
        self.assertNotIn(("Deployment", "zkfleet-worker"), self.objects)
        worker = self.get("StatefulSet", "zkfleet-worker")
        spec = worker["spec"]["template"]["spec"]
        c = self.container(worker)
        # Rollouts one pod at a time (StatefulSet's RollingUpdate, no surge);
        # all pods start at once, not each waiting for the previous one's Ready.
        self.assertEqual(worker["spec"]["updateStrategy"]["type"], "RollingUpdate")
        self.assertEqual(worker["spec"]["updateStrategy"].get("rollingUpdate", {}).get("maxUnavailable", 1), 1)
        self.assertEqual(worker["spec"]["podManagementPolicy"], "Parallel")
        labels = worker["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(worker["spec"]["selector"]["matchLabels"].items(), labels.items())
        # The governing Service: headless, exists, selects the worker pods.
        headless = self.get("Service", worker["spec"]["serviceName"])
        self.assertEqual(headless["spec"].get("clusterIP"), "None", "the worker StatefulSet's Service is not headless")
        self.assertLessEqual(headless["spec"]["selector"].items(), labels.items())
        container_ports = {p["name"] for p in c["ports"]}
        for p in headless["spec"]["ports"]:
            self.assertIn(p["targetPort"], container_ports)
        args = " ".join(c["args"])
        self.assertIn("--id=$(POD_NAME)", args)
        self.assertIn("--metrics-listen=", args)
        self.assertEqual(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")

        # preStop drains this pod's worker (the same id) and waits.
        pre_stop = " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
        self.assertRegex(pre_stop, r'zkctl .*drain "\$POD_NAME" --wait')

        # Readiness from the worker state, on the metrics port.
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/ready")
        self.assertIn(c["readinessProbe"]["httpGet"]["port"], ports)
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
        self.assertIn(f"--metrics-listen=0.0.0.0:{ports['metrics']}", args)

        # GPU requested; grace period covers drain + release.
        self.assertEqual(c["resources"]["limits"]["nvidia.com/gpu"], 1)
        drain_timeout = float(self.config["ZKFLEET_DRAIN_TIMEOUT_S"])
        self.assertIn("--drain-timeout=$(ZKFLEET_DRAIN_TIMEOUT_S)", args)
        self.assertGreaterEqual(spec["terminationGracePeriodSeconds"], required_stop_seconds(drain_timeout))

    @staticmethod
    def pod_volumes(workload):
        spec = workload["spec"]["template"]["spec"]
        return {v["name"]: v for v in spec.get("volumes", [])}

    def check_secret_volumes(self, workload):
        volumes = self.pod_volumes(workload)
        secrets = {n: v["secret"] for n, v in volumes.items() if "secret" in v}
        self.assertTrue(secrets, "no Secret volume")
        for name, secret in secrets.items():
            # 0400/0600: zkbroker/zkworker/zkctl refuse secret key files
            # that group or others can read.
            self.assertIn(secret.get("defaultMode"), (0o400, 0o600), f"volume {name}: defaultMode")
            for item in secret.get("items", []):
                self.assertIn(item.get("mode", secret["defaultMode"]), (0o400, 0o600), f"volume {name}: {item}")
            example = self.example_secrets.get(secret["secretName"])
            self.assertIsNotNone(example, f"{secret['secretName']} is not in deploy/kubernetes/keys/")
            data = set(example.get("stringData", {})) | set(example.get("data", {}))
            for item in secret.get("items", []):
                self.assertIn(item["key"], data, f"{secret['secretName']} has no {item['key']}")
        return volumes

    def mounted_file(self, container, volumes, path):
        """The volume a container file comes from, or fails."""
        for m in container.get("volumeMounts", []):
            if path.startswith(m["mountPath"].rstrip("/") + "/"):
                return volumes[m["name"]], path[len(m["mountPath"].rstrip("/")) + 1:]
        self.fail(f"{path} is on no mounted volume")

    def test_broker_curve_keys(self):
        broker = self.get("StatefulSet", "zkfleet-broker")
        c = self.container(broker)
        volumes = self.check_secret_volumes(broker)
        (secret,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--curve-secret-key=")]
        (allow,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--allow-dir=")]
        # The secret key: a copy of a Secret's file, made by an init container
        # with mode 0400 (fsGroup would make the Secret's own file 0440).
        volume, _ = self.mounted_file(c, volumes, secret)
        self.assertTrue("emptyDir" in volume or "secret" in volume, volume)
        if "emptyDir" in volume:
            inits = broker["spec"]["template"]["spec"].get("initContainers", [])
            copy = [i for i in inits if any(m["name"] == volume["name"] for m in i.get("volumeMounts", []))]
            self.assertTrue(copy, "nothing writes the broker's key into its emptyDir")
            self.assertIn("0400", " ".join(copy[0]["command"]))
            self.assertEqual(volume["emptyDir"].get("medium"), "Memory")
        # The allow-lists: workers/ and clients/ from Secrets.
        for kind in ("workers", "clients"):
            volume, _ = self.mounted_file(c, volumes, f"{allow}/{kind}/x.pub")
            self.assertIn("secret", volume, f"{allow}/{kind} is not a Secret")

    def test_worker_curve_keys(self):
        worker = self.get("StatefulSet", "zkfleet-worker")
        c = self.container(worker)
        volumes = self.check_secret_volumes(worker)
        args = " ".join(c["args"])
        pre_stop = " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
        for text in (args, pre_stop):
            for option, suffix in (("--curve-secret-key", ".secret"), ("--broker-public-key", ".pub")):
                m = re.search(option + r"[= ](\S+)", text)
                self.assertTrue(m, f"{option} missing in {text}")
                self.assertTrue(m.group(1).endswith(suffix), m.group(1))
                volume, _ = self.mounted_file(c, volumes, m.group(1))
                self.assertIn("secret", volume)
        # No fsGroup on the worker pod: it would make the key files 0440.
        self.assertNotIn("fsGroup", worker["spec"]["template"]["spec"].get("securityContext", {}))

    def test_worker_key_per_pod(self):
        """Each worker pod reads its own key, named after the pod: the broker
        counts strikes and holds FAULTED per key, so a key names one pod."""
        worker = self.get("StatefulSet", "zkfleet-worker")
        c = self.container(worker)
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")
        (secret,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--curve-secret-key=")]
        self.assertIn("$(POD_NAME)", secret, "the worker's key must be named after its pod")
        volume, file_name = self.mounted_file(c, self.pod_volumes(worker), secret)
        self.assertIn("secret", volume)
        # The preStop drain's client key, in the same Secret; not a worker key.
        pre_stop = " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
        drain_key = re.search(r"--curve-secret-key[= ](\S+)", pre_stop).group(1)
        drain_volume, drain_file = self.mounted_file(c, self.pod_volumes(worker), drain_key)
        self.assertEqual(drain_volume["name"], volume["name"])
        # Pods of a StatefulSet are NAME-0 .. NAME-(replicas-1); each has its
        # key in the Secret and its .pub in the workers' allow-list, named
        # after it (the peer name in the broker's logs).
        pods = [f"{worker['metadata']['name']}-{n}" for n in range(worker["spec"]["replicas"])]
        keys = self.example_secrets.get(volume["secret"]["secretName"])
        self.assertIsNotNone(keys, f"{volume['secret']['secretName']} is not in deploy/kubernetes/keys/")
        self.assertEqual(volume["secret"]["secretName"], "zkfleet-worker-keys")
        key_files = {k for k in keys.get("stringData", {}) if k.endswith(".secret")} - {drain_file}
        self.assertEqual(key_files, {file_name.replace("$(POD_NAME)", pod) for pod in pods},
                         "zkfleet-worker-keys must hold one zkfleet-worker-N.secret per replica, and no shared key")
        self.assertNotIn("items", volume["secret"], "items would leave out some pods' keys")
        allow = self.example_secrets.get("zkfleet-allow-workers")
        self.assertIsNotNone(allow, "zkfleet-allow-workers is not in deploy/kubernetes/keys/")
        self.assertEqual(set(allow.get("stringData", {})), {f"{pod}.pub" for pod in pods},
                         "zkfleet-allow-workers must hold one zkfleet-worker-N.pub per replica")

    def test_example_secrets_are_placeholders(self):
        z85_key = re.compile(r"^\s*(public-key|secret-key)\s*=\s*[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}\s*$", re.M)
        for name, secret in self.example_secrets.items():
            for key, text in secret.get("stringData", {}).items():
                self.assertIsNone(z85_key.search(text), f"{name}/{key} looks like a real key")
                self.assertIn("PLACEHOLDER", text, f"{name}/{key}")
            self.assertNotIn("data", secret, f"{name}: placeholders go in stringData")

    def test_pod_disruption_budget_allows_one_worker_down(self):
        pdb = self.get("PodDisruptionBudget", "zkfleet-worker")
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["maxUnavailable"], 1)
        labels = self.get("StatefulSet", "zkfleet-worker")["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(pdb["spec"]["selector"]["matchLabels"].items(), labels.items())

    def test_systemd_and_kubernetes_agree_on_the_stop_budget(self):
        worker = self.get("StatefulSet", "zkfleet-worker")
        unit = parse_systemd_unit(os.path.join(DEPLOY, "systemd", "zkworker@.service"))
        self.assertEqual(float(worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]),
                         float(unit["Service"]["TimeoutStopSec"][0]))


class EtcdBrokersTest(unittest.TestCase):
    """Brokers on an etcd journal (issue 48): deploy/kubernetes/ha/ and
    deploy/systemd/zkbroker-ha.service, etcd.default."""

    @classmethod
    def setUpClass(cls):
        d = os.path.join(DEPLOY, "kubernetes", "ha")
        cls.objects = {}
        for name in sorted(os.listdir(d)):
            if name.endswith((".yaml", ".yml")):
                for doc in load_yaml_documents(os.path.join(d, name)):
                    cls.objects[(doc["kind"], doc["metadata"]["name"])] = doc
        cls.unit = parse_systemd_unit(os.path.join(DEPLOY, "systemd", "zkbroker-ha.service"))
        cls.etcd_env = parse_env_file(os.path.join(DEPLOY, "systemd", "etcd.default"))

    def test_three_etcd_members_on_their_own_volumes_and_nodes(self):
        etcd = self.objects[("StatefulSet", "zkfleet-etcd")]
        self.assertEqual(etcd["spec"]["replicas"], 3)
        self.assertTrue(etcd["spec"]["volumeClaimTemplates"])
        anti = etcd["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        self.assertTrue(anti["requiredDuringSchedulingIgnoredDuringExecution"])
        (c,) = etcd["spec"]["template"]["spec"]["containers"]
        command = " ".join(c["args"])
        for flag in ("--auto-compaction-mode periodic", "--quota-backend-bytes", "--initial-cluster "):
            self.assertIn(flag, command)
        for i in range(3):
            self.assertIn(f"zkfleet-etcd-{i}=http://zkfleet-etcd-{i}.zkfleet-etcd:2380", command)
        headless = self.objects[("Service", "zkfleet-etcd")]
        self.assertEqual(headless["spec"]["clusterIP"], "None")

    def test_two_brokers_on_the_journal_only_the_ready_one_serves(self):
        broker = self.objects[("Deployment", "zkfleet-broker-ha")]
        self.assertGreaterEqual(broker["spec"]["replicas"], 2)
        pod = broker["spec"]["template"]
        (c,) = pod["spec"]["containers"]
        journals = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--journal=")]
        self.assertEqual(len(journals), 1)
        self.assertFalse(any(a.startswith("--data-dir") for a in c["args"]))
        for i in range(3):
            self.assertIn(f"zkfleet-etcd-{i}.zkfleet-etcd:2379", journals[0])
        # The Service's endpoints are the ready pods: a standby answers 503 on /ready.
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/ready")
        self.assertIn('SetReadiness(false, "standing by")',
                      open(os.path.join(SOURCE_DIR, "cmd", "zkbroker", "main.cpp")).read())
        service = self.objects[("Service", "zkfleet-broker")]
        self.assertLessEqual(service["spec"]["selector"].items(), pod["metadata"]["labels"].items())
        self.assertFalse(service["spec"].get("publishNotReadyAddresses", False))
        anti = pod["spec"]["affinity"]["podAntiAffinity"]
        self.assertTrue(anti["requiredDuringSchedulingIgnoredDuringExecution"])

    def test_systemd_unit_restarts_a_broker_that_lost_the_leadership(self):
        s = self.unit["Service"]
        self.assertIn("--journal ${ZKFLEET_JOURNAL}", s["ExecStart"][0])
        self.assertNotIn("--data-dir", s["ExecStart"][0])
        # Exit 75 (lost leadership) must come back, as a standby.
        self.assertEqual(s["Restart"], ["always"])
        self.assertNotIn("75", " ".join(s.get("RestartPreventExitStatus", [])))
        self.assertIn("kExitNotLeader = 75", open(os.path.join(SOURCE_DIR, "cmd", "zkbroker", "main.cpp")).read())
        self.assertEqual(self.etcd_env["ETCD_AUTO_COMPACTION_MODE"].strip('"'), "periodic")
        self.assertIn("etcd-3=", self.etcd_env["ETCD_INITIAL_CLUSTER"])


class InsecurePlaintextTest(unittest.TestCase):
    """CURVE is on by default and the deploy files keep it on."""

    def test_no_insecure_plaintext_in_deploy_files(self):
        for path, text in deploy_files():
            self.assertNotRegex(text, r"(?m)^(?!\s*#).*--insecure-plaintext", f"deploy/{path}")


if __name__ == "__main__":
    unittest.main()
