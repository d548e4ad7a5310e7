# Sourced by the fleet and GPU benchmark scripts: reading one Prometheus
# series from a zkbroker or zkworker --metrics-listen endpoint on this host.
#   metric PORT SERIES   prints the value (a float), or -1 when the endpoint
#                        does not answer or has no such series
metric() {
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request
try:
    body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
except Exception:
    print(-1); sys.exit()
for line in body.splitlines():
    if line.startswith(sys.argv[2] + " "):
        print(float(line.split()[-1])); break
else:
    print(-1)
PY
}
