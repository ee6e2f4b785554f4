"""What every ``twistd`` service of rmqproto does before the reactor runs.

It takes what another process could hold, its ports and its store's lock, while twistd
can still exit cleanly: when one is taken the process exits with status 1 and one line
that says which setting to change, instead of a traceback or a half-started server. And
it logs which of its key settings still have their (Java) defaults, so that a user who
runs two of them side by side sees why they clash.
"""

from twisted.internet.error import CannotListenError
from twisted.logger import Logger

from rmqproto.errors import RmqError
from rmqproto.store.mappedfile import StoreError

__all__ = ["StartupError", "StartsCleanly", "log_defaults"]

log = Logger()


class StartupError(SystemExit, RmqError):
    """Ends the process like ``sys.exit(message)``: one line, status 1. Being an Exception
    too, twistd treats it as a failed start first: it removes its pidfile and, daemonizing,
    tells the waiting parent, which prints the line and exits 1 (a bare SystemExit would
    leave that parent waiting forever)."""


class StartsCleanly:
    """Mixin for a ``MultiService`` that twistd starts (before ``MultiService`` in the bases).

    ``privilegedStartService`` binds the children's ports, then calls :meth:`claim` for
    the rest; a port in use or a locked store becomes :class:`StartupError` with the line
    ``"<what failed>; <advice(error)>"``. Nested in another such service, it lets the error
    through so that the outermost one, whose settings the user wrote, gives the advice.
    """

    def claim(self):
        """Take what else another process could hold (nothing by default)."""

    def advice(self, error):
        """Which setting to change for ``error`` (a :class:`CannotListenError` or a
        :class:`StoreError`)."""
        raise NotImplementedError

    def privilegedStartService(self):
        try:
            super().privilegedStartService()
            self.claim()
        except (CannotListenError, StoreError) as error:
            if isinstance(self.parent, StartsCleanly):
                raise
            raise StartupError("%s; %s" % (_what_failed(error), self.advice(error))) from None


def _what_failed(error):
    if isinstance(error, CannotListenError):
        reason = getattr(error.socketError, "strerror", None) or str(error.socketError)
        return "cannot listen on %s:%d: %s" % (error.interface or "*", error.port, reason)
    return str(error)


def log_defaults(name, values, given, settings, how):
    """Log which of ``settings`` (names) kept their defaults: neither the file nor the
    command line (``given``) set them. ``how`` says where to change them."""
    kept = ["%s=%s" % (setting, values[setting]) for setting in settings if setting not in given]
    if kept:
        log.info("{name} runs on the defaults {kept}; {how}", name=name, kept=", ".join(kept),
                 how=how)
