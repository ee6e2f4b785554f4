"""Drive the official C++ client (PyPI ``rocketmq``, bundling ``librocketmq.so``) in a subprocess.

Run as ``python -m support.cppclient NAMESRV TOPIC COUNT GROUP TIMEOUT [ACCESS_KEY SECRET_KEY]``:
sends COUNT messages, consumes them with a push consumer and prints ``{"sent": n,
"received": m}``; with the keys both clients sign their requests (``set_session_credentials``).
A native client may crash or hang at shutdown, so tests always run it in its own process.
"""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path


def available():
    """Whether the ``rocketmq`` package and its native library load."""
    try:
        import rocketmq.client  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def run(namesrv, topic, count, group, timeout=60, credentials=()):
    """Run the client in a subprocess (signing with ``credentials``, ``(access key, secret
    key)``, when given); its JSON report."""
    result = subprocess.run(
        [sys.executable, "-m", "support.cppclient", namesrv, topic, str(count), group,
         str(timeout), *credentials],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True,
        timeout=timeout + 60)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError("C++ client failed (%s):\n%s\n%s" % (result.returncode, result.stdout,
                                                                result.stderr))
    return json.loads(lines[-1])


def _main(namesrv, topic, count, group, timeout, *credentials):
    from rocketmq.client import Message, Producer, PushConsumer, SendStatus

    producer = Producer(group + "_cpp_producer")
    producer.set_namesrv_addr(namesrv)
    if credentials:
        producer.set_session_credentials(*credentials, "")
    producer.start()
    sent = 0
    for i in range(count):
        msg = Message(topic)
        msg.set_keys("cpp-key-%d" % i)
        msg.set_tags("TagC")
        msg.set_body("cpp body %d" % i)
        if producer.send_sync(msg).status == SendStatus.OK:
            sent += 1
    producer.shutdown()

    received = set()
    lock = threading.Lock()

    def on_message(msg):
        body = msg.body.decode() if isinstance(msg.body, bytes) else msg.body
        if body.startswith("cpp body "):
            with lock:
                received.add(int(body.rsplit(" ", 1)[1]))

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    if credentials:
        consumer.set_session_credentials(*credentials, "")
    consumer.subscribe(topic, on_message, "TagC")
    consumer.start()
    deadline = time.monotonic() + timeout
    while len(received) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    print(json.dumps({"sent": sent, "received": len(received)}), flush=True)
    consumer.shutdown()


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]),
          *sys.argv[6:8])
