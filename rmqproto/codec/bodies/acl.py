"""GET_BROKER_CLUSTER_ACL_CONFIG's body: Java's ``GetBrokerClusterAclConfigResponseBody`` of
``PlainAccessConfig`` accounts (RocketMQ 4.x ACL)."""

from rmqproto.codec.bodies._bean import (
    BOOL, STRING, BeanOf, JsonBean, ListOf, json_bean, member,
)

__all__ = ["PlainAccessConfig", "GetBrokerClusterAclConfigResponseBody"]


@json_bean
class PlainAccessConfig(JsonBean):
    """One account of ``plain_acl.yml``, as the broker reports it."""

    access_key: str = member(STRING, default=None)
    secret_key: str = member(STRING, default=None)
    white_remote_address: str = member(STRING, default=None)
    admin: bool = member(BOOL, default=False)
    default_topic_perm: str = member(STRING, default=None)
    default_group_perm: str = member(STRING, default=None)
    topic_perms: list = member(ListOf(STRING), default=None)
    group_perms: list = member(ListOf(STRING), default=None)


@json_bean
class GetBrokerClusterAclConfigResponseBody(JsonBean):
    global_white_addrs: list = member(ListOf(STRING), default=None)
    plain_access_configs: list = member(ListOf(BeanOf(PlainAccessConfig)), default=None)
