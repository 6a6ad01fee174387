"""An SFTP client nobody on the project wrote: paramiko's default `put()` (which confirms an
upload by `stat`-ing it at its path) sends an earn file into `inbox/`, the file is loaded and its
report read back from `reports/`; the same bytes sent again under another name are reported as a
duplicate naming the first batch.

Usage: paramiko_put.py HTTP_BASE KEY SECRET SFTP_PORT USER PRIVATE_KEY  (run by .ci/clients)
"""

import json
import sys
import tempfile
import time
import uuid

import httpx
import paramiko

base, key, secret, port, user, private_key = sys.argv[1:7]
headers = {"x-api-key": key, "x-api-secret": secret}
run = uuid.uuid4().hex[:8]
card = f"sftp-{run}"
for path, body in [
    ("/v1/members", {"firstName": "Ada", "userId": f"u-{card}", "externalId": card}),
    ("/v1/wallets", {"externalId": card}),
]:
    answer = httpx.post(base + path, json=body, headers=headers)
    assert answer.status_code in (200, 201), (path, answer.status_code, answer.text)

transport = paramiko.Transport(("127.0.0.1", int(port)))
transport.connect(username=user, pkey=paramiko.Ed25519Key.from_private_key_file(private_key))
sftp = paramiko.SFTPClient.from_transport(transport)


def report(name, deadline=60):
    """The report `reports/<name>.result.json`, once it is there."""
    until = time.monotonic() + deadline
    while True:
        try:
            with sftp.open(f"reports/{name}.result.json") as handle:
                return json.loads(handle.read())
        except FileNotFoundError:
            assert time.monotonic() < until, f"no report for {name}"
            time.sleep(0.2)


with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as earns:
    earns.write(f"id,walletId,amount,date\nsftp-{run}-1,{card},12.50,2026-11-20\n")
name = f"earns-{run}.csv"
attributes = sftp.put(earns.name, f"inbox/{name}")  # confirm=True: stat after the upload
assert attributes.st_size > 0, attributes
first = report(name)
assert first["state"] == "completed" and first["loaded"] == 1, first
print(f"paramiko: {name} uploaded, confirmed by stat, loaded and reported")

again = f"again-{run}.csv"
sftp.put(earns.name, f"inbox/{again}")
duplicate = report(again)
assert duplicate["state"] == "duplicate" and duplicate["duplicateOf"] == first["batch"], duplicate
print(f"paramiko: {again} (the same bytes) reported as a duplicate of batch {first['batch']}")
sftp.close()
transport.close()
