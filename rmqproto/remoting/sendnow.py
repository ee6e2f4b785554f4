"""Sending bytes on a TCP transport at once, as Netty's ``writeAndFlush`` from the event loop.

Twisted's ``transport.write`` only queues: the reactor registers the socket for writing,
wakes up in its next poll and sends then, so every answer costs two ``epoll_ctl`` calls
and one more loop turn, and a peer waiting for it waits for that turn too.
:func:`send_now` sends straight away when nothing is queued before the bytes (what could
not be sent, or anything on another kind of transport, goes through ``transport.write``,
so ordering, flow control and error handling stay Twisted's).
"""

from twisted.internet import tcp

__all__ = ["send_now", "plain_and_idle", "unsent_bytes", "pause_producer"]


def plain_and_idle(transport):
    """Whether ``transport`` is an open plain TCP connection with nothing queued to write:
    its socket may be written to directly without reordering anything."""
    return (isinstance(transport, tcp.Connection) and not transport.TLS and transport.connected
            and not transport.disconnecting and not transport.dataBuffer
            and not transport._tempDataBuffer and not transport._writeDisconnected)


def send_now(transport, data):
    """Write ``data`` to ``transport``, sending it now when the transport has nothing queued;
    whether it was all sent (else some waits in the transport)."""
    if plain_and_idle(transport):
        # writeSomeData's send without its two Python calls: this runs for every answer
        try:
            sent = transport.socket.send(data)
        except OSError:  # it would block, or the connection is lost: the reactor's write
            sent = 0     # queues the bytes, or reports the loss
        if sent == len(data):
            return True
        data = data[sent:]
    transport.write(data)
    return False


def unsent_bytes(transport):
    """The bytes ``transport`` holds for sending (0 for a transport that is not TCP)."""
    if isinstance(transport, tcp.Connection):
        return len(transport.dataBuffer) - transport.offset + transport._tempDataLen
    return 0


def pause_producer(transport):
    """Pause the streaming producer of ``transport`` as it does itself when its buffer is full
    (``FileDescriptor._maybePauseProducer``), so that it resumes the producer once all is sent.
    Through TLS the producer is the TLS layer's, which pauses ours."""
    producer = transport.producer
    if producer is not None and not getattr(transport, "producerPaused", False):
        transport.producerPaused = True
        producer.pauseProducing()
