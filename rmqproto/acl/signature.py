"""The request signature of ``AclClientRPCHook``: Java's ``AclUtils.combineRequestContent`` and
``AclSigner.calSignature``.

The signed content is the values of the request's ``extFields`` (``AccessKey`` and
``SecurityToken`` included, ``Signature`` left out) in the order of their keys, as UTF-8,
then the body; the signature is ``Base64(HmacSHA1(secretKey, content))``.
"""

import base64
import hashlib
import hmac

__all__ = ["ACCESS_KEY", "SECRET_KEY", "SIGNATURE", "SECURITY_TOKEN", "content_of", "sign",
           "signed_fields"]

#: ``SessionCredentials``' extFields names.
ACCESS_KEY, SECRET_KEY, SIGNATURE, SECURITY_TOKEN = (
    "AccessKey", "SecretKey", "Signature", "SecurityToken")


def _java_order(key):
    """Java's ``String.compareTo`` order (UTF-16 code units) for a ``TreeMap``'s keys."""
    return key.encode("utf-16-be", "surrogatepass")


def content_of(ext_fields, body, left_out=(SIGNATURE,)):
    """The bytes a signature covers: ``ext_fields``' values but those of ``left_out``, in key
    order, then ``body``. A ``None`` value counts as ``"null"``, as Java's ``StringBuilder``
    appends it."""
    keys = (sorted(ext_fields) if all(map(str.isascii, ext_fields))  # the usual: code point order
            else sorted(ext_fields, key=_java_order))
    text = "".join(["null" if value is None else value for value in
                    [ext_fields[key] for key in keys if key not in left_out]])
    return text.encode("utf-8", "replace") + (body if type(body) is bytes else bytes(body or b""))


def sign(content, secret_key):
    """``Base64(HmacSHA1(secret_key, content))`` as text."""
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def signed_fields(ext_fields, body, access_key, secret_key, security_token=None):
    """``ext_fields`` with the credentials and the signature added, as ``AclClientRPCHook``
    adds them (for our own clients and tests)."""
    fields = dict(ext_fields or {})
    fields[ACCESS_KEY] = access_key
    if security_token is not None:
        fields[SECURITY_TOKEN] = security_token
    fields[SIGNATURE] = sign(content_of(fields, body), secret_key)
    return fields
