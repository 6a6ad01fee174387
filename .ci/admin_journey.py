"""An operator's first journey through a client generated from the admin API's document
(openapi-python-client) and nothing else but one client-API call: the first owner signs in
with its one-time password and changes it, makes an organisation, a campaign and a key, sets a
rule set, runs an earn file dry and then sends it, follows the batch to its end, exports the
transactions and downloads the file, and finds all of it in the audit trail.

Usage: admin_journey.py PACKAGE_PARENT ADMIN_URL CLIENT_URL EMAIL ONE_TIME_PASSWORD
(run by .ci/clients)
"""

import importlib
import json
import pkgutil
import sys
import time
import urllib.request
import uuid

sys.path.insert(0, sys.argv[1])
admin_url, client_url, email, password = sys.argv[2:6]

import rewards_admin  # noqa: E402
from rewards_admin import AuthenticatedClient, Client  # noqa: E402
from rewards_admin.api.audit import list_audit_log  # noqa: E402
from rewards_admin.api.batches import dry_run_batch, get_batch, send_batch  # noqa: E402
from rewards_admin.api.exports import download_export, list_exports, start_export  # noqa: E402
from rewards_admin.api.keys import issue_key  # noqa: E402
from rewards_admin.api.me import change_password  # noqa: E402
from rewards_admin.api.organisations import create_campaign, create_org  # noqa: E402
from rewards_admin.api.rules import set_rule_set  # noqa: E402
from rewards_admin.api.sessions import sign_in  # noqa: E402
from rewards_admin.models import (  # noqa: E402
    BatchState,
    CampaignInput,
    ExportInput,
    ExportInputFormat,
    KeyInput,
    OrgInput,
    PasswordInput,
    Problem,
    SignInInput,
)
from rewards_admin.types import File  # noqa: E402

run = uuid.uuid4().hex[:10]

# Every generated module loads: a generator that writes broken code for an operation fails here.
for module in pkgutil.walk_packages(rewards_admin.__path__, "rewards_admin."):
    importlib.import_module(module.name)


def call(operation, *args, client, **kwargs):
    """The operation's parsed answer, which must be a success."""
    response = operation.sync_detailed(*args, client=client, **kwargs)
    name = operation.__name__.rsplit(".", 1)[-1]
    assert 200 <= response.status_code < 300, (name, response.status_code, response.content)
    assert not isinstance(response.parsed, Problem), (name, response.content)
    return response


def step(text):
    print(f"admin journey: {text}", flush=True)


step("the first owner signs in and changes its one-time password")
anonymous = Client(base_url=admin_url)
signed = call(sign_in, client=anonymous, body=SignInInput(email=email, password=password)).parsed
owner = AuthenticatedClient(base_url=admin_url, token=signed.token)
chosen = f"journey password {run}"
call(change_password, client=owner,
     body=PasswordInput(current_password=password, new_password=chosen))

step("an organisation, a campaign and a key")
org = call(create_org, client=owner, body=OrgInput(name=f"Journey {run}")).parsed
campaign = call(create_campaign, org.id, client=owner,
                body=CampaignInput(name="Points", currency="PTS")).parsed
key = call(issue_key, org.id, client=owner, body=KeyInput(campaign_id=campaign.id)).parsed

step("a rule set: two tokens per unit spent")
rules = b'[[rule]]\nid = "double"\npriority = 10\naward = "amount * 2"\n'
version = call(set_rule_set, org.id, campaign.id, client=owner,
               body=File(payload=rules, file_name="rules.toml")).parsed
assert version.version == 1, version

step("a member and its wallet, made by the client's own systems over the client API")


def client_post(path, body):
    request = urllib.request.Request(
        client_url + path, method="POST", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": key.api_key,
                 "x-api-secret": key.api_secret},
    )
    with urllib.request.urlopen(request) as response:
        assert 200 <= response.status < 300, response.status


client_post("/v1/members", {"externalId": f"card-{run}", "firstName": "Ada", "userId": run})
client_post("/v1/wallets", {"externalId": f"card-{run}"})

step("an earn file run dry, then sent and followed to its end")
rows = (f"id,walletId,amount,date\ne-1-{run},card-{run},10,2026-11-20T10:00:00Z\n"
        f"e-2-{run},card-{run},ten,2026-11-20T10:01:00Z\n").encode()
name = f"earns-{run}.csv"
dry = call(dry_run_batch, org.id, client=owner, name=name,
           body=File(payload=rows, file_name=name)).parsed
assert dry.summary["rows"] == 2 and dry.summary["loaded"] == 1, dry.summary
assert "ten" in dry.rejected_sample, dry.rejected_sample
sent = call(send_batch, org.id, client=owner, name=name, body=File(payload=rows, file_name=name))
assert sent.status_code == 202, sent.status_code
batch = sent.parsed
deadline = time.monotonic() + 60
while batch.state not in (BatchState.COMPLETED, BatchState.FAILED):
    assert time.monotonic() < deadline, f"the batch is still {batch.state}"
    time.sleep(0.2)
    batch = call(get_batch, org.id, batch.id, client=owner).parsed
assert batch.state == BatchState.COMPLETED and batch.loaded == 1, batch
assert batch.summary["tokens"] == 20, batch.summary

step("the transactions exported to CSV and downloaded")
started = call(start_export, org.id, client=owner,
               body=ExportInput(format_=ExportInputFormat.CSV)).parsed
deadline = time.monotonic() + 60
while True:
    files = call(list_exports, org.id, client=owner).parsed
    export = next(f for f in files.data if f.name == started.name)
    if export.status != "writing":
        break
    assert time.monotonic() < deadline, "the export is still being written"
    time.sleep(0.2)
assert export.status == "written" and export.rows == 1, export
downloaded = call(download_export, org.id, started.name, client=owner)
lines = downloaded.content.decode().splitlines()
assert len(lines) == 2 and f"e-1-{run}" in lines[1], lines

step("each change in the audit trail")
trail = call(list_audit_log, client=owner, org=org.id, limit=100).parsed
operations = {entry.operation for entry in trail.data}
for operation in ["key.issue", "rules.set", "batch.send", "export.transactions"]:
    assert operation in operations, (operation, sorted(operations))
step("done")
