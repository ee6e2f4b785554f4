"""Admin requests the broker passes on to consumers and whose answers it relays, as Java's
``AdminBrokerProcessor#callConsumer`` does: GET_CONSUMER_RUNNING_INFO (307, ``mqadmin
consumerStatus``, ``consumerProgress -s true``) and CONSUME_MESSAGE_DIRECTLY (309, ``mqadmin
consumeMessage``: the message, read from the store by its offset msgId, is the body); and
INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, ``mqadmin getConsumerStatus``), whose answer
gathers each consumer's own offsets (``Broker2Client#getConsumeStatus``)."""

from twisted.internet import defer
from twisted.logger import Logger

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.offsets import GetConsumerStatusBody
from rmqproto.codec.codes import MQVersion, RequestCode as RC, ResponseCode as R, version_desc
from rmqproto.codec.fastjson import java_hashmap_order
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.message import decode_message_id
from rmqproto.errors import CodecError
from rmqproto.remoting import RemotingTimeoutError
from rmqproto.remoting.dispatch import exception_remark

__all__ = ["ConsumerCallProcessor", "CALL_CLIENT_TIMEOUT", "CONSUMER_STATUS_TIMEOUT"]

log = Logger()

#: Seconds the consumer has to answer (``Broker2Client#callClient``'s 10 s).
CALL_CLIENT_TIMEOUT = 10.0
#: Seconds each consumer has to tell its offsets (``Broker2Client#getConsumeStatus``' 5 s).
CONSUMER_STATUS_TIMEOUT = 5.0


class ConsumerCallProcessor:
    """Passes requests on to a consumer of one broker (``controller``: client_manager, store,
    config)."""

    def __init__(self, controller):
        self.controller = controller

    def register_with(self, dispatcher):
        dispatcher.register(int(RC.GET_CONSUMER_RUNNING_INFO), self.get_consumer_running_info)
        dispatcher.register(int(RC.CONSUME_MESSAGE_DIRECTLY), self.consume_message_directly)
        dispatcher.register(int(RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS), self.get_consumer_status)

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

    def get_consumer_status(self, request, context):
        """Ask each consumer of the group (or only ``clientAddr``, a client id) for its
        offsets of the topic (GET_CONSUMER_STATUS_FROM_CLIENT); the answers by client id. A
        consumer that fails or does not answer in 5 s is left out, as Java leaves it."""
        header = h.GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.client_manager.consumer_group_info(header.group)
        members = list(info.channel_info_table.values()) if info is not None else []
        if not members:
            return request.response(R.SYSTEM_ERROR, remark="No Any Consumer online in the "
                                    "consumer group: [%s]" % header.group)
        asked = []
        for member in members:  # Java stops at the client asked for
            if member.version < MQVersion.V3_0_7_SNAPSHOT:
                return request.response(R.SYSTEM_ERROR, remark="the client does not support "
                                        "this feature. version=" + version_desc(member.version))
            if not (header.client_addr or "").strip() or header.client_addr == member.client_id:
                asked.append(member)
                if (header.client_addr or "").strip():
                    break
        question = h.GetConsumerStatusRequestHeader(topic=header.topic, group=header.group)

        def offsets(answer, member):
            if answer.code == R.SUCCESS and answer.body:
                return member.client_id, GetConsumerStatusBody.from_json(
                    answer.body).message_queue_table
            return None

        def failed(failure, member):
            log.warn("[get-consumer-status] of {client} failed: {error}",
                     client=member.client_id, error=failure.getErrorMessage())

        calls = [member.connection.send_request(
            RemotingCommand(int(RC.GET_CONSUMER_STATUS_FROM_CLIENT),
                            ext_fields=question.to_ext_fields()), CONSUMER_STATUS_TIMEOUT)
            .addCallback(offsets, member).addErrback(failed, member) for member in asked]

        def answer(results):
            table = dict(result for result in results if result is not None)
            return request.response(R.SUCCESS, body=GetConsumerStatusBody(
                consumer_table={c: table[c] for c in java_hashmap_order(list(table))}).to_json())

        return defer.gatherResults(calls).addCallback(answer)
