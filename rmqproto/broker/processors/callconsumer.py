"""Admin requests the broker passes on to one consumer and whose answer it relays, as Java's
``AdminBrokerProcessor#callConsumer`` does: GET_CONSUMER_RUNNING_INFO (307, ``mqadmin
consumerStatus``, ``consumerProgress -s true``) and CONSUME_MESSAGE_DIRECTLY (309, ``mqadmin
consumeMessage``: the message, read from the store by its offset msgId, is the body)."""

from twisted.logger import Logger

from rmqproto.codec import headers as h
from rmqproto.codec.codes import MQVersion, RequestCode as RC, ResponseCode as R, version_desc
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.message import decode_message_id
from rmqproto.errors import CodecError
from rmqproto.remoting import RemotingTimeoutError
from rmqproto.remoting.dispatch import exception_remark

__all__ = ["ConsumerCallProcessor", "CALL_CLIENT_TIMEOUT"]

log = Logger()

#: Seconds the consumer has to answer (``Broker2Client#callClient``'s 10 s).
CALL_CLIENT_TIMEOUT = 10.0


class ConsumerCallProcessor:
    """Passes requests on to a consumer of one broker (``controller``: client_manager, store,
    config)."""

    def __init__(self, controller):
        self.controller = controller

    def register_with(self, dispatcher):
        dispatcher.register(int(RC.GET_CONSUMER_RUNNING_INFO), self.get_consumer_running_info)
        dispatcher.register(int(RC.CONSUME_MESSAGE_DIRECTLY), self.consume_message_directly)

    def get_consumer_running_info(self, request, context):
        header = h.GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        return self.call_consumer(RC.GET_CONSUMER_RUNNING_INFO, request, request.body,
                                  header.consumer_group, header.client_id)

    def consume_message_directly(self, request, context):
        header = h.ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        request.ext_fields["brokerName"] = self.controller.config["brokerName"]
        body = request.body
        try:
            _, offset = decode_message_id(header.msg_id or "")
        except CodecError:
            pass  # Java passes the request body on when the id does not decode
        else:
            found = self.controller.store.select_one_message_by_offset(offset)
            if found is not None:
                body = bytes(found)
        return self.call_consumer(RC.CONSUME_MESSAGE_DIRECTLY, request, body,
                                  header.consumer_group, header.client_id)

    def call_consumer(self, code, request, body, group, client_id):
        """``callConsumer``: the consumer's answer as the answer to ``request``, or Java's
        SYSTEM_ERROR / CONSUME_MSG_TIMEOUT remarks."""
        info = self.controller.client_manager.consumer_group_info(group)
        member = info.find_channel(client_id) if info is not None else None
        if member is None:
            return request.response(R.SYSTEM_ERROR,
                                    remark="The Consumer <%s> <%s> not online" % (group, client_id))
        if member.version < MQVersion.V3_1_8_SNAPSHOT:
            return request.response(R.SYSTEM_ERROR, remark=(
                "The Consumer <%s> Version <%s> too low to finish, please upgrade it to "
                "V3_1_8_SNAPSHOT" % (client_id, version_desc(member.version))))
        forwarded = RemotingCommand(int(code), ext_fields=dict(request.ext_fields), body=body)

        def relay(answer):
            return request.response(answer.code, remark=answer.remark,
                                    ext_fields=answer.ext_fields, body=answer.body)

        def failed(failure):
            if failure.check(RemotingTimeoutError):
                return request.response(R.CONSUME_MSG_TIMEOUT, remark="consumer <%s> <%s> "
                                        "Timeout: %s" % (group, client_id, failure.getErrorMessage()))
            log.warn("invoke consumer <{group}> <{client}> failed: {error}", group=group,
                     client=client_id, error=failure.getErrorMessage())
            return request.response(R.SYSTEM_ERROR, remark="invoke consumer <%s> <%s> Exception: "
                                    "%s" % (group, client_id, exception_remark(failure.value)))

        return member.connection.send_request(forwarded, CALL_CLIENT_TIMEOUT).addCallbacks(
            relay, failed)
