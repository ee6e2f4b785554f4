"""Build the speedups' fuzz harness and run its targets (docs/speedups.md).

    python3 tests/fuzz/run.py [--seconds N] [target ...]

runs each target (all by default) for N seconds (600 unless told) from its corpus in
``tests/fuzz/corpus/<target>/`` and merges into that directory the inputs that found new
coverage; a finding stops the run with the input saved as ``build/fuzz/crash-*`` and the
harness's report. ``--seeds`` writes the seed inputs made from ``tests/vectors/`` instead.
The suite runs every target briefly (``tests/codec/test_fuzz_speedups.py``)."""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SOURCES = REPO / "rmqproto" / "codec" / "speedups"
CORPUS = HERE / "corpus"
BUILD = REPO / "build" / "fuzz"
#: Each input is at most this long: the harness's inputs stand for one read or one record run.
MAX_LEN = 4096
FLAGS = ["-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=fuzzer,address,undefined",
         "-fno-sanitize-recover=all"]
#: Python allocates with malloc so that AddressSanitizer sees the end of every object.
ENVIRONMENT = {"PYTHONMALLOC": "malloc",
               "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def targets():
    """The target names (``fuzz.TARGETS``; ``targets.py`` itself runs only in the harness)."""
    from fuzz import TARGETS
    return TARGETS


def missing():
    """Why the harness cannot be built here (no clang, or no libFuzzer runtime), or None."""
    if shutil.which("clang") is None:
        return "clang is not installed (apt-get install clang)"
    runtime = subprocess.run(["clang", "-print-file-name=libclang_rt.fuzzer-x86_64.a"],
                             capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(runtime):
        return "clang has no libFuzzer runtime (libclang_rt.fuzzer)"
    return None


def _python_flags():
    paths = sysconfig.get_paths()
    include = ["-I" + paths["include"], "-I" + paths["platinclude"]]
    libdir = sysconfig.get_config_var("LIBDIR")
    version = sysconfig.get_config_var("LDVERSION")
    return include, ["-L" + libdir, "-Wl,-rpath," + libdir, "-lpython" + version, "-lm"]


def build():
    """The harness binary, built unless one of the same sources and flags is there."""
    sources = sorted(SOURCES.glob("*.c")) + [HERE / "harness.c"]
    include, link = _python_flags()
    command = ["clang", *FLAGS, "-I" + str(SOURCES), *include, *map(str, sources), *link]
    digest = hashlib.sha256(" ".join(command).encode())
    for path in sources + sorted(SOURCES.glob("*.h")):
        digest.update(path.read_bytes())
    binary = BUILD / ("harness-" + digest.hexdigest()[:16])
    if not binary.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        partial = binary.with_suffix(".partial")
        built = subprocess.run([*command, "-o", str(partial)], capture_output=True, text=True)
        if built.returncode != 0:
            raise RuntimeError("building the fuzz harness failed:\n" + built.stderr[-4000:])
        partial.rename(binary)
    return binary


def run(binary, target, seconds, corpus_dirs, extra=()):
    """Run ``target`` for ``seconds`` over ``corpus_dirs`` (new inputs go to the first);
    the finished process (returncode, stdout and stderr as text)."""
    # the checkout first, then what this interpreter imports from (a venv's packages too)
    path = [str(REPO), str(REPO / "tests")] + [p for p in sys.path if p and os.path.isdir(p)]
    env = dict(os.environ, RMQ_FUZZ_TARGET=target, PYTHONPATH=os.pathsep.join(path),
               **ENVIRONMENT)
    command = [str(binary), "-max_total_time=%d" % seconds, "-max_len=%d" % MAX_LEN,
               "-timeout=20", "-rss_limit_mb=4096", "-print_final_stats=1",
               "-artifact_prefix=%s/" % BUILD, *extra, *map(str, corpus_dirs)]
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO,
                          timeout=seconds + 120)


def _vectors(name):
    return [bytes.fromhex(v["hex"]) for v in
            json.loads((REPO / "tests" / "vectors" / (name + ".json")).read_text())["vectors"]]


def seeds():
    """Seed inputs of each target, made from the golden vectors of ``tests/vectors/``."""
    frames = _vectors("frame_command")
    records = _vectors("store_message_record")
    transfers = _vectors("ha_transfer")
    headers = json.loads((REPO / "tests" / "vectors" / "header_ext_fields.json").read_text())
    classes = sorted(_header_class_names())
    ext_inputs = []
    for vector in headers["vectors"][:40]:
        fields = vector["fields"]
        ext = fields["command"].get("extFields") or {}
        if fields["class"] in classes:
            text = "\0".join("%s\0%s" % item for item in ext.items())
            ext_inputs.append(bytes([classes.index(fields["class"])])
                              + text.encode("utf-8", "surrogateescape"))
    unit = (lambda offset, size, tags: offset.to_bytes(8, "big") + size.to_bytes(4, "big")
            + tags.to_bytes(8, "big"))
    return {
        "split_frames": [b"".join(frames[i:i + 3]) for i in range(0, len(frames), 3)],
        "decode_frame": [frame[4:] for frame in frames],
        "decode_header": ext_inputs,
        "properties": [v for v in _vectors("store_properties") if v],
        "take_usual_records": [bytes([i % 2]) + b"".join(records[i:]) for i in range(3)],
        "dispatch_usual_records": [bytes([i]) + b"".join(records[i:]) for i in range(3)],
        "batch_body": _vectors("store_batch"),
        "transfer_units": [bytes([2]) + unit(0, len(records[0]), 7) + unit(len(records[0]), 8, 0)
                           + records[0] + bytes(8)],
        "ha_receiver": transfers + [b"".join(transfers[1:3])],
        "record_columns": [bytes([i]) + b"".join(records[i:]) for i in range(4)],
    }


def _header_class_names():
    """The header classes' names, as ``targets.decode_header`` orders them."""
    from rmqproto.codec.headers import HEADER_CLASSES
    return [cls.__name__ for cls in HEADER_CLASSES.values()]


def write_seeds():
    for target, inputs in seeds().items():
        directory = CORPUS / target
        directory.mkdir(parents=True, exist_ok=True)
        for data in inputs:
            (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=600, help="per target")
    parser.add_argument("--seeds", action="store_true", help="write the seed corpus and stop")
    parser.add_argument("names", nargs="*", metavar="target", help="default: every target")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the checkout's rmqproto and fuzz
    if args.seeds:
        write_seeds()
        return 0
    problem = missing()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    binary = build()
    for target in args.names or targets():
        with tempfile.TemporaryDirectory() as found:
            done = run(binary, target, args.seconds, [found, CORPUS / target])
            summary = [line for line in done.stderr.splitlines() if "DONE" in line]
            print("%s: %s" % (target, (summary or ["no summary"])[-1]), flush=True)
            if done.returncode != 0:
                print(done.stderr[-8000:], file=sys.stderr)
                return 1
            run(binary, target, 0, [CORPUS / target, found], ["-merge=1"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
