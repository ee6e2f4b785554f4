"""The broker: topic table, NameServer registration, send path, administration and the
consume side, composed by :class:`~rmqproto.broker.controller.BrokerController`."""
