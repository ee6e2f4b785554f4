"""A short round of the DLedger fault harness against a broker group on a DLedger commit log
while a Java producer sends (``support.brokerfaults``): kill -9, SIGSTOP, the leader or a
follower cut off, links cut one way; no acknowledged message lost, nothing consumed that no
send attempted, logs byte-identical up to the committed entry. Three Java 4.9.7 brokers, and
one Java broker with two of ours (waiting, xfail and not run, until our broker takes a DLedger
commit log). The long round is a command of its own (``python -m support.brokerfaults``)."""

import pytest

from support.brokerfaults import run_round
from support.brokergroup import KINDS, kinds_params
from support.interop import java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")


@pytest.mark.parametrize("kinds", kinds_params("java", "java1-ours2"))
def test_a_short_round_of_faults_while_a_producer_sends(tmp_path, kinds):
    problems, acks, nemesis = run_round(tmp_path, KINDS[kinds], seconds=15, seed=46)
    assert problems == [], problems[:10]
    assert len(acks) > 100
    assert nemesis.done
