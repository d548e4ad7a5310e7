#!/usr/bin/env python3
"""Worker start -> READY with a bellperson .params file (issue 44, item 1).

    bench/bellman/worker_start.py [--build build/release] [--log-rows 18] [--runs 5]

Makes a synthetic PoRep-shaped parameter set of 2^LOG_ROWS rows
(`zkfleet-dev bellman-params --synthetic`), starts a local zkbroker
(plaintext, loopback), then starts `zkworker --backend cpu --bellman-circuit`
again and again, each time kill -9ed as soon as it is READY, in two modes:

  remembered  --key-check-cache DIR: the first start checks every point and
              records the file; the restarts decode it unchecked;
  image       the same plus --keep-decoded-params: the first start also writes
              the decoded image; the restarts map it.

Start -> READY is timed from just before the worker's exec to the time
stamp of its `LOADING -> READY` log line (JSON logs, milliseconds). Prints one
line per start (seconds and MB/s of .params file) and the median of the
restarts per mode. The file stays in the page cache between starts (a
restart after kill -9 on the same host).
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_time(line):
    """The JSON log line's time as seconds since the epoch, or None."""
    try:
        t = json.loads(line)["time"]
    except (ValueError, KeyError, TypeError):
        return None
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def start_worker(build, params, workers_endpoint, cache, keep, timeout):
    args = [os.path.join(build, "cmd/zkworker/zkworker"), "--insecure-plaintext", "--broker", workers_endpoint,
            "--backend", "cpu", "--bellman-circuit", "c=" + params, "--key-check-cache", cache,
            "--log-format", "json"]
    if keep:
        args.append("--keep-decoded-params")
    t0 = time.time()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready_at, lines = None, []
    deadline = t0 + timeout
    for line in proc.stdout:
        lines.append(line.rstrip())
        if "LOADING -> READY" in line:
            ready_at = log_time(line) or time.time()
            break
        if time.time() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if ready_at is None:
        sys.exit("worker_start.py: the worker did not become READY:\n" + "\n".join(lines[-20:]))
    loaded = [l for l in lines if "loaded bellman parameters" in l]
    return ready_at - t0, (json.loads(loaded[-1]).get("message", loaded[-1]) if loaded else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--log-rows", type=int, default=18)
    ap.add_argument("--runs", type=int, default=5, help="restarts per mode after the first start")
    ap.add_argument("--modes", default="remembered,image")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="zkfleet-worker-start-")
    broker = None
    try:
        params, vk = os.path.join(work, "s.params"), os.path.join(work, "s.vk")
        subprocess.run([os.path.join(build, "cmd/zkfleet-dev/zkfleet-dev"), "bellman-params", "--synthetic",
                        str(args.log_rows), "--seed", "1", "--out", params, "--vk", vk], check=True,
                       stdout=subprocess.DEVNULL)
        size = os.path.getsize(params)
        # The key-check cache does not record a file changed within 2 s of its
        # open (checked_keys.hpp): wait, as for a file written earlier.
        time.sleep(2.5)
        clients, workers = "tcp://127.0.0.1:%d" % free_port(), "tcp://127.0.0.1:%d" % free_port()
        broker = subprocess.Popen([os.path.join(build, "cmd/zkbroker/zkbroker"), "--insecure-plaintext",
                                   "--clients", clients, "--workers", workers, "--verification-key", "c=" + vk,
                                   "--journal", os.path.join(work, "journal")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        print("# %s %s, %d cores, load %.1f, commit %s; 2^%d synthetic .params, %d bytes" % (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), os.uname().nodename,
            os.cpu_count(), os.getloadavg()[0],
            subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
            args.log_rows, size))
        for mode in args.modes.split(","):
            cache = os.path.join(work, "cache-" + mode)
            restarts = []
            for i in range(args.runs + 1):
                seconds, loaded = start_worker(build, params, workers, cache, mode == "image", args.timeout)
                what = "first start" if i == 0 else "restart after kill -9"
                print("%-10s %-22s %7.3f s  %7.0f MB/s  | %s" % (mode, what, seconds, size / 1e6 / seconds, loaded))
                if i > 0:
                    restarts.append(seconds)
            if restarts:
                m = statistics.median(restarts)
                print("%-10s restarts: median %.3f s (%.0f MB/s), range %.3f-%.3f s" % (
                    mode, m, size / 1e6 / m, min(restarts), max(restarts)))
    finally:
        if broker:
            broker.kill()
            broker.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
