"""Metric families from label values and samples, for the collectors."""

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

__all__ = ["gauge", "gauges", "counter"]


def gauges(name, doc, names, samples):
    """A gauge family ``name`` with labels ``names`` and ``samples``: ``(values, value)``."""
    metric = GaugeMetricFamily(name, doc, labels=names)
    for values, value in samples:
        metric.add_metric(values, value)
    return metric


def gauge(name, doc, names, values, value):
    """A gauge family ``name`` with one sample: labels ``names`` = ``values``."""
    return gauges(name, doc, names, [(values, value)])


def counter(name, doc, names, values, value):
    """A counter family ``name`` (exposed as ``name_total``) with one sample."""
    metric = CounterMetricFamily(name, doc, labels=names)
    metric.add_metric(values, value)
    return metric
