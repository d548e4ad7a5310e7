#!/usr/bin/env bash
# Checks deploy/prometheus with promtool: the alert rules parse, their unit
# tests (alerts_test.yml) pass, and prometheus.yml is a valid configuration.
# prometheus-kubernetes.yml is not checked here: Debian's promtool is built
# without Kubernetes service discovery (deploy_test.py parses it instead).
# Fails when promtool is missing: scripts/install-deps.sh installs it.
set -euo pipefail
dir="${1:?usage: promtool_test.sh DEPLOY_PROMETHEUS_DIR}"
if ! command -v promtool >/dev/null 2>&1; then
  echo "FAILED: promtool not found; run ./scripts/install-deps.sh ('apt-get install prometheus')" >&2
  exit 1
fi
cd "$dir"
promtool --version 2>&1 | head -1
promtool check rules alerts.yml
promtool test rules alerts_test.yml
promtool check config prometheus.yml
