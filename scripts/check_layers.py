#!/usr/bin/env python3
"""Checks the floors of the tree (docs/architecture.md, "Floors").

Fails (exit 1, one line per finding) when
  * a file includes a header of a component it may not use (a lower floor
    reaching up, or a sideways reach the table below does not allow);
  * a component that must stay socket-free (the wire, storage, the worker's
    core, the engine, witness generation) includes ZeroMQ;
  * a CUDA runtime call (cudaMalloc, cudaStreamCreate, cudaMemcpyAsync,
    cudaSetDevice, ...) appears outside the engine's runtime layer
    (gpu/zkfleet/runtime/), in any source, .c, .proto or CMake file of the
    tree (tests, benchmarks, fuzzers and clients included; kernel launches
    take a stream and are not calls of the runtime);
  * a comment, or a `path` in README.md and docs/, names a source file that no
    longer exists (left behind by a rename);
  * the public API's schema (schema/grpc/*.proto, package zkfleet.v1) imports
    the internal one (schema/zkfleet.proto): zkfleet.v1 owns its messages, so
    an internal change is never a public break.

Usage: check_layers.py [--root DIR]   (default: the repository holding this file)
tests/layering runs it on the tree and on fixture trees with one planted
violation each, which must fail.
"""
import argparse
import os
import re
import sys

# --------------------------------------------------------------------------
# The components, in path order: the first pattern that matches a file's path
# (relative to the root) names its component.
COMPONENT_OF_PATH = [
    (r"^common/", "common"),
    (r"^wire/", "wire"),
    # The engine's public face (gpu/include). Its value types (the engine's
    # vocabulary, as LevelDB's Status and Slice are) may be used on every floor.
    (r"^gpu/include/zkfleet/engine/(curve|types|verify|witness|assignment|file_identity)\.hpp$", "engine_vocabulary"),
    (r"^gpu/include/", "engine"),
    # Inside the engine: one component per folder of gpu/zkfleet (engine/ is
    # the API's implementation).
    (r"^gpu/zkfleet/(ff|runtime|io|curve|wtns|r1cs|zkey|msm|ntt|pairing|bellman|groth16|snarkjs|engine)/", r"gpu/\1"),
    (r"^gpu/", "gpu/unplaced"),
    # Witness generation: beside the engine, on its public face.
    (r"^witgen/", "witgen"),
    (r"^fleet/", "fleet"),
    (r"^metrics/", "metrics"),
    (r"^storage/", "storage"),
    (r"^fetch/", "fetch"),
    (r"^broker/", "broker"),
    # The worker: its session owns the socket, its flags resolve into the
    # session's options; everything else is the core.
    (r"^worker/zkfleet/worker/(worker_session|worker_flags)\.", "worker"),
    (r"^worker/", "worker_core"),
    (r"^clients/cpp/", "client"),
    (r"^devtools/", "devtools"),
    (r"^cmd/", "cmd"),
]

# Who may include whom (besides itself): each lists only floors below it, or
# beside it where the arrow goes one way. Inside the engine (gpu/CMakeLists.txt):
#   0 ff   1 runtime   2 io   3 curve, wtns, r1cs, zkey   4 msm, ntt, pairing, bellman
#   5 groth16   6 snarkjs   7 engine (the API's implementation)
ENGINE_BELOW = {
    "ff": [],
    "runtime": ["ff"],
    "io": [],
    "curve": ["ff", "runtime"],
    "wtns": ["io"],
    "r1cs": ["io"],
    "zkey": ["wtns", "io", "runtime"],
    "msm": ["curve", "ff", "runtime"],
    "ntt": ["ff", "runtime"],
    "pairing": ["curve", "ff"],
    "bellman": ["curve", "ff", "runtime", "r1cs", "io"],
    "groth16": ["msm", "ntt", "pairing", "bellman", "curve", "ff", "runtime", "zkey", "wtns", "io"],
    "snarkjs": ["groth16", "io"],
    "engine": ["snarkjs", "groth16", "msm", "ntt", "pairing", "bellman", "curve", "ff", "runtime", "zkey", "wtns", "r1cs",
               "io"],
}
ENGINE_INTERNAL = ["gpu/" + folder for folder in ENGINE_BELOW]
ENGINE_API = ["engine", "engine_vocabulary"]
MAY_INCLUDE = {
    "schema": [],
    "common": [],
    "wire": ["common", "schema"],
    "engine_vocabulary": ["common"],
    "engine": ["common", "engine_vocabulary"],
    "fleet": ["common", "schema", "wire"],
    "metrics": ["common", "schema", "wire"],
    "storage": ["common", "schema", "wire"],
    # The worker's witness fetcher (libcurl, OpenSSL): no sockets of ours.
    "fetch": ["common", "schema", "wire"],
    # Witness generation (circom's wasm -> a sandboxed native program): the
    # curve of a generator's prime is the engine's vocabulary; nothing else of
    # the engine, and nothing inside gpu/.
    "witgen": ["common", "engine_vocabulary"],
    "worker_core": ["common", "schema", "wire", "metrics", "fetch", "witgen"] + ENGINE_API,
    "worker": ["common", "schema", "wire", "metrics", "fleet", "fetch", "witgen", "worker_core"] + ENGINE_API,
    "broker": ["common", "schema", "wire", "metrics", "fleet", "storage"] + ENGINE_API,
    "client": ["common", "schema", "wire", "fleet"],
    # Devtools computes with fields and curves: the one user of the inside.
    "devtools": ["common"] + ENGINE_API + ENGINE_INTERNAL,
    "cmd": ["common", "schema", "wire", "metrics", "fleet", "storage", "fetch", "witgen", "broker", "worker", "worker_core",
            "client", "devtools"] + ENGINE_API,
}
for folder, below in ENGINE_BELOW.items():
    MAY_INCLUDE["gpu/" + folder] = ["common", "engine_vocabulary"] + ["gpu/" + b for b in below]
MAY_INCLUDE["gpu/engine"] += ["engine"]
# API headers implemented below engine/: each such file may include its header.
IMPLEMENTS = {
    "gpu/zkfleet/runtime/pinned_memory.cpp": "gpu/include/zkfleet/engine/pinned_memory.hpp",
    "gpu/zkfleet/wtns/public_signals.cpp": "gpu/include/zkfleet/engine/wtns.hpp",
}

# Components that stay free of sockets: they must not include ZeroMQ.
NO_ZEROMQ = {"common", "wire", "storage", "fetch", "witgen", "worker_core", "metrics"} | set(ENGINE_API) | set(ENGINE_INTERNAL)
ZEROMQ_HEADER = re.compile(r"^(zmq\.h|zmq\.hpp|zmq_addon\.hpp)$")

# CUDA runtime calls: only the engine's runtime layer makes them (streams,
# events, devices, buffers, copies: gpu/zkfleet/runtime/cuda_device.hpp and
# cuda_stream.hpp). Types (cudaStream_t) and constants are not calls.
CUDA_CALL = re.compile(r"\b(cuda[A-Z]\w*)\s*\(")
CUDA_ALLOWED = re.compile(r"^gpu/zkfleet/runtime/")
# Where the rule looks: every tracked kind of file that could hold a call.
CUDA_SCAN_EXT = (".cpp", ".hpp", ".cc", ".h", ".cu", ".cuh", ".c", ".proto", ".cmake")
CUDA_SCAN_SKIP = ("tests/layering/fixtures/",)

SOURCE_DIRS = ["common", "wire", "gpu", "witgen", "fleet", "metrics", "storage", "fetch", "broker", "worker", "clients/cpp",
               "devtools", "cmd"]
SOURCE_EXT = (".cpp", ".hpp", ".cc", ".h", ".cu", ".cuh")
# The CUDA rule looks further: the clients, tests, benchmarks, fuzzers and
# the schema too.
CUDA_SCAN_DIRS = SOURCE_DIRS + ["clients", "tests", "bench", "fuzz", "schema", "cmake"]
# Where stale file names are looked for besides source comments.
DOC_FILES = ["README.md"]
DOC_DIRS = ["docs"]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
FILE_MENTION = re.compile(r"(?<![\w.@/-])([\w./-]*[A-Za-z0-9_]\.(?:cpp|hpp|cu|cuh|cc))\b")
# A mention may end with a ':' line number or be a glob; globs are not checked.


def component_of(rel):
    for pattern, name in COMPONENT_OF_PATH:
        m = re.search(pattern, rel)
        if m:
            return m.expand(name)
    return None


def source_files(root):
    for top in SOURCE_DIRS:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in ("build", "node_modules", "__pycache__"))
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def include_roots(root):
    """Every folder that holds a zkfleet/ header tree (a component's include dir)."""
    roots = []
    for top in SOURCE_DIRS:
        for dirpath, dirnames, _ in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("build", "node_modules")]
            if "zkfleet" in dirnames:
                roots.append(dirpath)
    return roots


def resolve(root, roots, including_rel, target):
    """The root-relative path an include names, or None (system/generated)."""
    here = os.path.join(root, os.path.dirname(including_rel), target)
    if os.path.isfile(here):
        return os.path.relpath(os.path.normpath(here), root)
    for r in roots:
        candidate = os.path.join(r, target)
        if os.path.isfile(candidate):
            return os.path.relpath(os.path.normpath(candidate), root)
    return None


def strip_strings(line):
    return re.sub(r'"(\\.|[^"\\])*"', '""', line)


def comment_of(line):
    """The // comment on a line (C++ sources), or the text of a /* */ line."""
    code = strip_strings(line)
    at = code.find("//")
    if at >= 0:
        return line[line.find("//"):] if line.find("//") >= 0 else ""
    stripped = line.strip()
    if stripped.startswith("*") or stripped.startswith("/*"):
        return stripped
    return ""


def known_files(root):
    names, paths = set(), set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "build", "node_modules", "__pycache__")]
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            names.add(name)
            paths.add(rel)
    return names, paths


def mention_exists(mention, names, paths):
    if "*" in mention:
        return True
    mention = mention.lstrip("./")
    if "/" not in mention:
        return mention in names
    # A path: some file's path ends with it (mentions may start mid-tree).
    return any(p == mention or p.endswith("/" + mention) for p in paths)


PROTO_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"')
PUBLIC_SCHEMA_DIR = os.path.join("schema", "grpc")


def public_schema_findings(root):
    """The public schema imports nothing of the internal one."""
    findings = []
    base = os.path.join(root, PUBLIC_SCHEMA_DIR)
    if not os.path.isdir(base):
        return findings
    for name in sorted(os.listdir(base)):
        if not name.endswith(".proto"):
            continue
        rel = os.path.join(PUBLIC_SCHEMA_DIR, name)
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = PROTO_IMPORT.match(line)
                if m and not m.group(1).startswith("google/protobuf/"):
                    findings.append(f"{rel}:{number}: the public schema imports {m.group(1)}; zkfleet.v1 owns its "
                                    f"messages (map them at the front door: broker/zkfleet/broker/public_api.hpp)")
    return findings


def without_comments(text, rel):
    """The text with comments blanked (newlines kept, so line numbers hold):
    /* */ and // in C, C++, CUDA and .proto files, # in CMake files."""
    if rel.endswith((".cmake", "CMakeLists.txt")):
        return "\n".join(line.split("#")[0] for line in text.split("\n"))
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return "\n".join(strip_strings(line).split("//")[0] for line in text.split("\n"))


def cuda_call_findings(root):
    findings = []
    for top in CUDA_SCAN_DIRS + [""]:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            if top == "":  # the top level only: CMakeLists.txt
                dirnames[:] = []
            dirnames[:] = sorted(d for d in dirnames if d not in ("build", "node_modules", "__pycache__", ".git"))
            for name in sorted(filenames):
                if not (name.endswith(CUDA_SCAN_EXT) or name == "CMakeLists.txt"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if CUDA_ALLOWED.search(rel) or rel.startswith(CUDA_SCAN_SKIP):
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    code = without_comments(f.read(), rel)
                for number, line in enumerate(code.split("\n"), 1):
                    for call in CUDA_CALL.findall(line):
                        findings.append(f"{rel}:{number}: {call} outside the engine's runtime layer "
                                        f"(gpu/zkfleet/runtime/); use its Stream, Event, Buffer and copy calls "
                                        f"(cuda_device.hpp, cuda_stream.hpp) or engine::PinnedMemory")
    return findings


def check(root):
    findings = []
    roots = include_roots(root)
    names, paths = known_files(root)
    for rel in source_files(root):
        comp = component_of(rel)
        if comp == "gpu/unplaced":
            findings.append(f"{rel}: in a folder of gpu/ without a floor (add it to ENGINE_BELOW)")
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if m:
                target = m.group(2)
                if ZEROMQ_HEADER.match(target):
                    if comp in NO_ZEROMQ:
                        findings.append(f"{rel}:{number}: {comp} must stay socket-free but includes <{target}>")
                    continue
                if target == "zkfleet.pb.h":
                    dep = "schema"
                else:
                    path = resolve(root, roots, rel, target)
                    if path is None:
                        continue  # a system or third-party header
                    dep = component_of(path)
                if IMPLEMENTS.get(rel) == path:
                    continue
                if comp and dep and dep != comp and dep not in MAY_INCLUDE.get(comp, []):
                    findings.append(f"{rel}:{number}: {comp} may not include {target} ({dep}); "
                                    f"{comp} may include: {', '.join(MAY_INCLUDE.get(comp, [])) or 'nothing else'}")
                continue
            for mention in FILE_MENTION.findall(comment_of(line)):
                if not mention_exists(mention, names, paths):
                    findings.append(f"{rel}:{number}: the comment names {mention}, which does not exist")
    findings += public_schema_findings(root)
    findings += cuda_call_findings(root)
    doc_files = [d for d in DOC_FILES if os.path.isfile(os.path.join(root, d))]
    for d in DOC_DIRS:
        base = os.path.join(root, d)
        if os.path.isdir(base):
            doc_files += sorted(os.path.join(d, n) for n in os.listdir(base) if n.endswith(".md"))
    for rel in doc_files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for code in re.findall(r"`([^`]+)`", line):
                    for mention in FILE_MENTION.findall(code):
                        if "/" in mention and not mention_exists(mention, names, paths):
                            findings.append(f"{rel}:{number}: names {mention}, which does not exist")
    return findings


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(here))
    args = parser.parse_args()
    findings = check(os.path.abspath(args.root))
    for finding in findings:
        print(finding)
    if findings:
        print(f"check_layers: {len(findings)} finding(s) in {args.root}", file=sys.stderr)
        return 1
    print(f"check_layers: {args.root}: floors respected, no stale file names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
