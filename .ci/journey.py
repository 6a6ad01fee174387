"""A client's first journey, through a client generated from one version's OpenAPI document
(openapi-python-client) and nothing else: every request, body and answer goes through the
generated functions and models, so a document that generates wrong types, or a version that
answers in another version's shapes, fails here.

Usage: journey.py PACKAGE_PARENT BASE_URL KEY SECRET  (run by .ci/clients)
"""

import datetime
import sys
import time
import uuid

sys.path.insert(0, sys.argv[1])
base_url, key, secret = sys.argv[2:5]

from rewards_client import Client  # noqa: E402
from rewards_client.api.catalogue import search_products  # noqa: E402
from rewards_client.api.holds import capture_hold, place_hold  # noqa: E402
from rewards_client.api.member_guide import create_guide_member, create_guide_wallet  # noqa: E402
from rewards_client.api.members import create_member  # noqa: E402
from rewards_client.api.orders import create_order, decrypt_line, get_order  # noqa: E402
from rewards_client.api.transactions import (  # noqa: E402
    burn,
    earn,
    earn_status,
    get_transaction,
    list_transactions,
    reverse,
)
from rewards_client.api.transfers import transfer  # noqa: E402
from rewards_client.api.wallets import balance_at, create_wallet, get_wallet, list_wallets  # noqa: E402
from rewards_client.models import (  # noqa: E402
    BurnInput,
    CaptureInput,
    EarnBody,
    EarnStatus,
    GuideMemberInput,
    HoldInput,
    HoldStatus,
    InterfaceVersion,
    LineInput,
    MemberInput,
    OrderInput,
    Problem,
    ReversalBody,
    TransactionType,
    TransferInput,
    WalletInput,
)

(VERSION,) = list(InterfaceVersion)
client = Client(base_url=base_url, headers={"x-api-key": key, "x-api-secret": secret})
run = uuid.uuid4().hex[:10]


def call(operation, *args, **kwargs):
    """The operation's parsed answer, which must be a success."""
    response = operation.sync_detailed(*args, client=client, x_api_version=VERSION, **kwargs)
    name = operation.__name__.rsplit(".", 1)[-1]
    assert 200 <= response.status_code < 300, (name, response.status_code, response.content)
    assert response.parsed is not None and not isinstance(response.parsed, Problem), (
        name,
        response.content,
    )
    return response.parsed


def step(text):
    print(f"journey {VERSION}: {text}", flush=True)


step("a member, then a wallet it owns by reference (its card number)")
card, other_card = f"card-{run}", f"card-{run}-b"
member = call(
    create_member,
    body=MemberInput(external_id=card, first_name="Ada", user_id=f"u-{run}"),
)
wallet = call(create_wallet, body=WalletInput(external_id=card))
assert wallet.owner_id == member.id, (wallet.owner_id, member.id)

step("a member and wallet through the member guide's operations")
guide = call(
    create_guide_member,
    body=GuideMemberInput(external_id=f"guide-{run}", name="Grace", user_id=f"g-{run}"),
)
other = call(create_guide_wallet, body=WalletInput(external_id=other_card, owner=guide.external_id))

step("an earn, followed to its outcome")
before_earn = datetime.datetime.now(datetime.timezone.utc)
accepted = call(
    earn,
    body=EarnBody(
        id=f"earn-{run}", wallet_id=card, amount=500.25, date=before_earn, description="groceries"
    ),
)
deadline = time.monotonic() + 60
while True:
    status = call(earn_status, accepted.request_id)
    if status.status in (EarnStatus.COMPLETED, EarnStatus.REJECTED):
        break
    assert time.monotonic() < deadline, f"the earn is still {status.status}"
    time.sleep(0.2)
assert status.status == EarnStatus.COMPLETED, status
earned = call(get_transaction, status.transaction_id)
assert earned.type_ == TransactionType.EARN and earned.source_amount == 500.25, earned
tokens = status.tokens
assert tokens > 0, status

step("a burn, and the wallet's transactions filtered by type")
after_earn = datetime.datetime.now(datetime.timezone.utc)
spent = call(burn, body=BurnInput(amount=10, description="coffee", external_id=f"burn-{run}", wallet_id=card))
assert spent.type_ == TransactionType.BURN and spent.amount == 10, spent
burns = call(list_transactions, wallet_id=card, type_=[TransactionType.BURN])
assert burns.total == 1 and [t.id for t in burns.data] == [spent.id], burns
earns = call(list_transactions, wallet_id=card, type_=[TransactionType.EARN])
assert [t.id for t in earns.data] == [earned.id], earns

step("a product search, sorted")
products = call(search_products, sort="price:asc", limit=20, is_available=True)
assert products.total > 0, products
prices = [min(v.price for v in p.variants) for p in products.data]
assert prices == sorted(prices), prices
product = next(
    p for p in products.data if not p.book_in_advance and any(v.available for v in p.variants)
)
variant = min((v for v in product.variants if v.available), key=lambda v: v.price)
assert variant.price <= tokens - 10, (variant.price, tokens)

step("an order, and its codes")
order = call(
    create_order,
    body=OrderInput(
        owner=card,
        wallet_id=card,
        lines=[LineInput(product_id=product.id, variant_id=variant.id, quantity=1)],
    ),
)
assert order.total == variant.price, (order.total, variant.price)
order = call(get_order, order.id)
(line,) = order.lines
assert line.codes and all("•" in c.code for c in line.codes), line.codes
revealed = call(decrypt_line, order.id, line.id, decrypt=True)
assert revealed.codes and all("•" not in c.code for c in revealed.codes), revealed.codes

step("a return of part of the earn")
returned = call(reverse, earned.id, body=ReversalBody(external_id=f"return-{run}", amount=100))
assert returned.type_ == TransactionType.BURN and returned.reversal_of == earned.id, returned

step("a hold, captured in part")
hold = call(
    place_hold,
    body=HoldInput(amount=20, description="fuel", external_id=f"hold-{run}", wallet_id=card),
)
assert hold.status == HoldStatus.HELD, hold
captured = call(capture_hold, hold.id, body=CaptureInput(amount=15))
assert captured.status == HoldStatus.CAPTURED and captured.captured == 15, captured

step("a transfer to another member's wallet")
moved = call(
    transfer,
    body=TransferInput(amount=5, external_id=f"transfer-{run}", from_wallet_id=card, to_wallet_id=other_card),
)
assert moved.amount == 5, moved
assert call(get_wallet, other.id).balance == 5

step("the balance at an instant, and now")
then = call(balance_at, card, at=after_earn)
assert then.balance == tokens, (then.balance, tokens)
now = call(get_wallet, wallet.id)
spent_since = 10 + order.total + returned.amount + 15 + 5
assert abs(now.balance - (tokens - spent_since)) < 1e-6, (now.balance, tokens, spent_since)

step("the wallet list, in this version's shape")
listed = call(list_wallets, external_id=card)
pages = listed if isinstance(listed, list) else [listed]
assert [w.id for page in pages for w in page.data] == [wallet.id], listed
step("done")
