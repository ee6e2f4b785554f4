"""The ACL admin requests, answered as Java's ``AdminBrokerProcessor`` answers them (4.9.7):
UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
GET_BROKER_CLUSTER_ACL_INFO and GET_BROKER_CLUSTER_ACL_CONFIG.

An edit the ACL refuses is answered with the request's ``*_FAILED`` code and the reason. With
``aclEnable=false`` every one is answered with an error saying so (a 4.9.7 broker fails
with a NullPointerException there, or does not answer at all).
"""

from twisted.logger import Logger

from rmqproto.acl import AclError
from rmqproto.acl.edits import AccessConfig
from rmqproto.broker.acl import version_json
from rmqproto.broker.config import broker_addr
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R

__all__ = ["AclAdminProcessor", "java_split"]

log = Logger()

_DISABLED = "ACL is not enabled on this broker (aclEnable=false)"


def java_split(text):
    """``UtilAll.split(text, ",")``: Java's ``String.split``, trailing empty pieces dropped."""
    if text is None:
        return None
    pieces = text.split(",")
    if len(pieces) > 1:
        while pieces and not pieces[-1]:
            pieces.pop()
    return pieces


class AclAdminProcessor:
    """The ACL admin requests of one broker (``controller``: config, access_validator)."""

    def __init__(self, controller):
        self.controller = controller

    def register_with(self, dispatcher):
        for code, handler in ((RC.UPDATE_AND_CREATE_ACL_CONFIG, self.update_access_config),
                              (RC.DELETE_ACL_CONFIG, self.delete_access_config),
                              (RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, self.update_global_white),
                              (RC.GET_BROKER_CLUSTER_ACL_INFO, self.get_acl_version),
                              (RC.GET_BROKER_CLUSTER_ACL_CONFIG, self.get_acl_config)):
            dispatcher.register(int(code), handler)

    def _edit(self, request, failed_code, failed_remark, edit):
        validator = self.controller.access_validator
        if validator is None:
            return request.response(failed_code, remark=_DISABLED)
        try:
            done = edit(validator)
        except (AclError, OSError) as exc:
            log.warn("ACL edit (request code {code}) refused: {error}", code=request.code,
                     error=exc)
            return request.response(failed_code, remark=str(exc))
        if not done:
            return request.response(failed_code, remark=failed_remark)
        return request.response(R.SUCCESS)

    def update_access_config(self, request, context):
        header = h.CreateAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        config = AccessConfig(
            header.access_key, header.secret_key, header.white_remote_address,
            bool(header.admin), header.default_topic_perm, header.default_group_perm,
            java_split(header.topic_perms), java_split(header.group_perms))
        log.info("updateAndCreateAccessConfig of {key} called by {peer}", key=header.access_key,
                 peer=context.peer)
        return self._edit(request, R.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
                          "The accesskey[%s] corresponding to accessConfig has been updated "
                          "failed." % header.access_key,
                          lambda validator: validator.update_access_config(config))

    def delete_access_config(self, request, context):
        header = h.DeleteAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        log.info("DeleteAccessConfig of {key} called by {peer}", key=header.access_key,
                 peer=context.peer)
        return self._edit(request, R.DELETE_ACL_CONFIG_FAILED,
                          "The accesskey[%s] corresponding to accessConfig has been deleted "
                          "failed." % header.access_key,
                          lambda validator: validator.delete_access_config(header.access_key))

    def update_global_white(self, request, context):
        header = h.UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext_fields(request.ext_fields)
        patterns = java_split(header.global_white_addrs)
        log.info("updateGlobalWhiteAddrsConfig called by {peer}", peer=context.peer)
        return self._edit(request, R.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
                          "The globalWhiteAddresses[%s] has been updated failed."
                          % header.global_white_addrs,
                          lambda validator: validator.update_global_white_addrs(
                              patterns, header.acl_file_full_path))

    def get_acl_version(self, request, context):
        validator = self.controller.access_validator
        if validator is None:
            return request.response(R.SYSTEM_ERROR, remark=_DISABLED)
        config = self.controller.config
        default, versions = validator.version_info()
        header = h.GetBrokerAclConfigResponseHeader(
            version=(default.to_json() if default is not None else b"null").decode(),
            all_acl_file_version=version_json(versions).decode(),
            broker_name=config["brokerName"], broker_addr=broker_addr(config),
            cluster_name=config["brokerClusterName"])
        return request.response(R.SUCCESS, ext_fields=header.to_ext_fields())

    def get_acl_config(self, request, context):
        validator = self.controller.access_validator
        if validator is None:
            return request.response(R.SYSTEM_ERROR, remark=_DISABLED)
        return request.response(R.SUCCESS, body=validator.all_config().to_json())
