"""Prometheus metrics of every service (docs/observability.md).

Each service owns one ``CollectorRegistry`` holding custom collectors that read the live
state when Prometheus scrapes (nothing is counted on the send path): :mod:`.broker` (broker
statistics, runtime figures, consumer lag, store), :mod:`.ha` (the master's view of its
slaves, group transfer), :mod:`.dledger` (a DLedger member), :mod:`.remoting`
(connections, the dispatcher's own error answers, the NameServer's route table).
:mod:`.endpoint` serves a registry at ``/metrics`` on ``metricsPort``.
"""
