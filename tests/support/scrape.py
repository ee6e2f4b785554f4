"""Scrape a ``/metrics`` endpoint and parse it with ``prometheus_client``'s own parser."""

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port, timeout=5.0):
    """``{sample name: [(labels, value), …]}`` of ``http://127.0.0.1:<port>/metrics``."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=timeout) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode("utf-8")
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples, name, **labels):
    """The one value of ``name`` whose labels include ``labels``."""
    (found,) = [v for have, v in samples.get(name, ()) if labels.items() <= have.items()]
    return found
