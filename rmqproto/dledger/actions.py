"""What the Raft core hands back: :class:`Ready` and the items in it."""

import enum
from dataclasses import dataclass, field
from typing import Any, List, Optional

__all__ = ["Role", "TermState", "Send", "Reply", "Ready"]


class Role(enum.Enum):
    """``MemberState.Role``."""

    UNKNOWN = 0
    CANDIDATE = 1
    LEADER = 2
    FOLLOWER = 3


@dataclass(frozen=True)
class TermState:
    """The ``currterm`` file: ``currTerm`` and ``voteLeader`` (None = empty string)."""

    curr_term: int
    vote_leader: Optional[str]


@dataclass
class Send:
    """A request to peer ``to``; give its answer (or None on failure) to ``DLedgerNode.deliver``."""

    to: str
    request: Any


@dataclass
class Reply:
    """The answer to the request received with ``token``.

    ``positions`` is set for a settled batch append: the data position of each body
    (Java's ``BatchAppendFuture#getPositions``), which the wire answer does not carry.
    """

    token: Any
    response: Any
    positions: Optional[List[int]] = None


@dataclass
class Ready:
    """Everything one round of input produced, in the order it must be acted on.

    1. ``term_state``: write it to ``currterm`` (and sync) before anything below leaves;
       replies such as a vote ACCEPT depend on it.
    2. ``messages`` to send and ``replies`` to answer.
    3. ``role_changes``: ``(term, role)`` in order, for the broker's role handler.
    """

    term_state: Optional[TermState] = None
    messages: List[Send] = field(default_factory=list)
    replies: List[Reply] = field(default_factory=list)
    role_changes: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.term_state or self.messages or self.replies or self.role_changes)
