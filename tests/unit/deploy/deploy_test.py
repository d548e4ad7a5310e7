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
                       "zkfleet_broker_epoch"):
            self.assertIn(needed, exprs)


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
        self.assertEqual(len(s["EnvironmentFile"]), 2)
        env = dict(self.worker_env, **self.instance_env)
        for var in re.findall(r"\$\{?(\w+)\}?", start + " " + stop):
            if var != "MAINPID":
                self.assertIn(var, env, f"the unit uses {var}, worker.env / worker-gpu0.env do not set it")

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

    def test_worker_deployment(self):
        worker = self.get("Deployment", "zkfleet-worker")
        spec = worker["spec"]["template"]["spec"]
        c = self.container(worker)
        self.assertEqual(worker["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1)
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

    def test_pod_disruption_budget_allows_one_worker_down(self):
        pdb = self.get("PodDisruptionBudget", "zkfleet-worker")
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["maxUnavailable"], 1)
        labels = self.get("Deployment", "zkfleet-worker")["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(pdb["spec"]["selector"]["matchLabels"].items(), labels.items())

    def test_systemd_and_kubernetes_agree_on_the_stop_budget(self):
        worker = self.get("Deployment", "zkfleet-worker")
        unit = parse_systemd_unit(os.path.join(DEPLOY, "systemd", "zkworker@.service"))
        self.assertEqual(float(worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]),
                         float(unit["Service"]["TimeoutStopSec"][0]))


if __name__ == "__main__":
    unittest.main()
