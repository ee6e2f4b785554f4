"""``python -m rmqproto.tools.rmqadmin``: the ``rmqadmin`` command line."""

import sys

from rmqproto.tools.rmqadmin import main

sys.exit(main())
