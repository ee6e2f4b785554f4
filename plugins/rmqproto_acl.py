"""The access validators rmqproto ships: ``plain`` (RocketMQ 4.9's ``plain_acl.yml``)."""

from zope.interface import provider

from rmqproto.pluggable import IAccessValidatorFactory


@provider(IAccessValidatorFactory)
class PlainAccess:
    """Accounts, permissions and white addresses of ``plain_acl.yml`` (``PlainAccessValidator``)."""

    name = "plain"
    description = "RocketMQ 4.9's plain_acl.yml: accounts, permissions, white addresses"

    @staticmethod
    def create(config, reactor):
        from rmqproto.broker.acl import PlainAccessValidator

        return PlainAccessValidator(config, reactor)
