"""The web console (docs/observability.md): the cluster as the NameServer sees it, topics
and consumer groups, each slave's lag drawn live and each DLedger group's leader and
elections, served on ``consolePort`` with updates pushed as server-sent events.

:mod:`.view` (pure) keeps the histories and makes the snapshot, :mod:`.poller` gathers the
facts through the admin core, :mod:`.web` serves the page, the snapshot and the events.
"""
