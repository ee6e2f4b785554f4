"""Put/get counters and TPS samples for the runtime info (``StoreStatsService``).

Samples are taken once a second by the store (``sample(now)``); a TPS over ``n``
seconds compares the newest sample with the one ``n`` samples earlier, and is the empty
string until that many samples exist, as in Java.
"""

import collections

from rmqproto.codec.fastjson import java_double_str

__all__ = ["StoreStats", "format_runtime"]

_MAX_SAMPLES = 601
_WINDOWS = (10, 60, 600)
#: ``putMessageDistributeTime``'s buckets, by the time a put took.
_BUCKETS = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
            "[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")


def format_runtime(elapsed_ms):
    """``getFormatRuntime``: ``[ d days, h hours, m minutes, s seconds ]``."""
    seconds = elapsed_ms // 1000
    return "[ %d days, %d hours, %d minutes, %d seconds ]" % (
        seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60, seconds % 60)


def _tps(samples, field, window):
    if len(samples) <= window:
        return ""
    last, before = samples[-1], samples[-(window + 1)]
    elapsed = last[0] - before[0]
    if elapsed <= 0:
        return ""
    return java_double_str((last[field] - before[field]) / elapsed * 1000)


class StoreStats:
    def __init__(self, boot_timestamp):
        self.boot_timestamp = boot_timestamp
        self.put_times_total = 0
        self.put_size_total = 0
        self.put_failed_times = 0
        self.get_found = 0
        self.get_miss = 0
        self.get_transferred = 0
        self.get_entire_time_max = 0
        self.put_distribution = [0] * len(_BUCKETS)
        self.samples = collections.deque(maxlen=_MAX_SAMPLES)

    def put(self, messages, size):
        """A put of ``messages`` records of ``size`` bytes. The store appends within one
        reactor turn, so every put is in the ``[<=0ms]`` bucket and the longest put
        (``putMessageEntireTimeMax``) took 0 ms."""
        self.put_times_total += messages
        self.put_size_total += size
        self.put_distribution[0] += 1

    def put_failed(self):
        self.put_failed_times += 1

    def get(self, found, transferred):
        if found:
            self.get_found += 1
        else:
            self.get_miss += 1
        self.get_transferred += transferred

    def sample(self, now):
        self.samples.append((now, self.put_times_total, self.get_found, self.get_miss,
                             self.get_found + self.get_miss, self.get_transferred))

    def runtime_info(self, now):
        total = self.put_times_total or 1

        def tps(field):
            return " ".join(_tps(self.samples, field, w) for w in _WINDOWS)

        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": format_runtime(now - self.boot_timestamp),
            "putMessageEntireTimeMax": "0",  # see put()
            "putMessageTimesTotal": str(total),
            "putMessageFailedTimes": str(self.put_failed_times),
            "putMessageSizeTotal": str(self.put_size_total),
            "putMessageDistributeTime": " ".join(
                "%s:%d" % (label, n) for label, n in zip(_BUCKETS, self.put_distribution)),
            "putMessageAverageSize": java_double_str(self.put_size_total / total),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": str(self.get_entire_time_max),
            "putTps": tps(1),
            "getFoundTps": tps(2),
            "getMissTps": tps(3),
            "getTotalTps": tps(4),
            "getTransferedTps": tps(5),
            "putLatency99": "0.00",
            "putLatency999": "0.00",
        }
