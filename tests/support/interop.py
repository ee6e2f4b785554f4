"""Builds and drives the Java golden-vector tool in ``tests/interop/`` (real RocketMQ classes).

``tests/vectors/<kind>.json`` holds vectors the tool wrote, so codec tests run without
Java; with Java and Maven present the suite rebuilds the tool, regenerates the vectors
and asks Java to decode what rmqproto encodes.
"""

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTEROP_DIR = ROOT / "tests" / "interop"
VECTOR_DIR = ROOT / "tests" / "vectors"

#: Module flags the 4.9.x store needs on Java 17.
JAVA_FLAGS = [
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "-Xms64m", "-Xmx512m",
]


def java_available():
    """Whether Java and Maven are on PATH."""
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def load_vectors(kind):
    """The checked-in vectors of ``kind``: a list of ``{"name", "fields", "hex"}``."""
    with open(VECTOR_DIR / (kind + ".json"), encoding="utf-8") as fh:
        return json.load(fh)["vectors"]


class JavaInterop:
    """The built tool: regenerate vectors, or decode bytes with the Java classes."""

    def __init__(self):
        with open(INTEROP_DIR / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one Maven build of the tool at a time
            result = subprocess.run(
                ["mvn", "-q", "-B", "compile", "dependency:copy-dependencies",
                 "-DoutputDirectory=target/lib"],
                cwd=INTEROP_DIR, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if result.returncode != 0:
            raise RuntimeError("building the interop tool failed:\n"
                               + result.stdout.decode(errors="replace"))
        target = INTEROP_DIR / "target"
        self.classpath = os.pathsep.join([str(target / "classes"), str(target / "lib" / "*")])

    def _java(self, *args, stdin=None):
        result = subprocess.run(
            ["java", *JAVA_FLAGS, "-cp", self.classpath, "rmqproto.interop.Main", *args],
            input=stdin, capture_output=True, check=False)
        if result.returncode != 0:
            raise RuntimeError("interop tool failed: %s" % result.stderr.decode(errors="replace"))
        return result.stdout

    def generate(self, directory):
        """Write fresh vectors into ``directory``."""
        self._java("generate", str(directory))

    def decode(self, kind, blobs, **extra):
        """Decode each of ``blobs`` as ``kind`` with Java; a list of ``{"fields"}`` or ``{"error"}``."""
        lines = [json.dumps(dict(extra, kind=kind, hex=bytes(b).hex())) for b in blobs]
        out = self._java("decode", stdin=("\n".join(lines) + "\n").encode())
        return [json.loads(line) for line in out.decode("utf-8").splitlines()]
