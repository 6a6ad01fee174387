"""Signs the first owner in to the admin API as a person would, and prints an automation token
for schemathesis: changes the one-time password, turns on two-factor sign-in (so that a run
requiring it of everyone does not lock the token out), and makes a token with every scope.

Usage: admin_token.py BASE_URL EMAIL ONE_TIME_PASSWORD
"""

import base64
import datetime
import hashlib
import hmac
import json
import struct
import sys
import time
import urllib.request

base, email, password = sys.argv[1:4]


def call(method, path, body=None, token=None):
    request = urllib.request.Request(base + path, method=method)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", "Bearer " + token)
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(request, data) as response:
        return json.loads(response.read() or b"null")


def totp(secret_base32):
    """RFC 6238: HMAC-SHA1 over the 30-second step, six digits."""
    secret = base64.b32decode(secret_base32 + "=" * (-len(secret_base32) % 8))
    digest = hmac.new(secret, struct.pack(">Q", int(time.time()) // 30), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return "%06d" % (number % 1_000_000)


session = call("POST", "/admin/v1/sessions", {"email": email, "password": password})["token"]
chosen = "contract-" + password
call("PUT", "/admin/v1/me/password", {"currentPassword": password, "newPassword": chosen}, session)
secret = call("POST", "/admin/v1/me/two-factor", {}, session)["secret"]
call("POST", "/admin/v1/me/two-factor/confirm", {"code": totp(secret)}, session)
expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
scopes = ["read", "configure", "support", "service", "operators"]
body = {"name": "schemathesis", "scopes": scopes, "expiresAt": expires.isoformat()}
print(call("POST", "/admin/v1/tokens", body, session)["token"])
