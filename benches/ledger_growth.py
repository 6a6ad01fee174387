"""How the cost of loading rows into SQLite grows with the table, by idempotency-key shape.

Not part of `cargo bench`: sqlite3 alone (Python's module), no service. A table with the
ledger's columns and indexes (time-ordered id, (wallet_id, date, id), (campaign_id, date),
(org_id, created_at)) and one of three idempotency indexes: `text` (org_id, kind, external_id),
`hash` (a 16-byte SHA-256 key, as migrations 13-14 made it), `none`. It loads BASE rows in
million-row months, then times FILE rows of random UUID ids over 5,000 wallets in 5,000-row
transactions (the pipeline's chunk), generation time excluded.

    python3 benches/ledger_growth.py hash 0 1000000          # fresh table
    python3 benches/ledger_growth.py hash 5000000 1000000    # after 5,000,000 rows
    CACHE_KB=262144 REUSE=1 python3 benches/ledger_growth.py hash 5000000 1000000

REUSE=1 loads FILE more rows into the database an earlier run left; CACHE_KB sets SQLite's page
cache (default 65,536 KiB, the service writer's). Databases go to $GROWTH_DIR (default /tmp).
Figures of 2026-11-25 in the README ("Batch files").
"""
import sqlite3, uuid, random, time, sys, os, hashlib
variant, base_rows, file_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
path = os.path.join(os.environ.get("GROWTH_DIR", "/tmp"), f"growth_{variant}_{base_rows}.db")
CACHE = int(os.environ.get("CACHE_KB", "65536"))
REUSE = os.environ.get("REUSE") == "1"
if not REUSE:
  for p in (path, path+"-wal", path+"-shm"):
    if os.path.exists(p): os.remove(p)
ORG = str(uuid.uuid4()); CAMP = str(uuid.uuid4())
rnd = random.Random(1)
wallets = [str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(5000)]
seq = [0]
if REUSE: rnd.seed(int(time.time()))
def row(month):
    seq[0] += 1
    ext = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
    tid = "%012x-7000-8000-%012x" % (int(time.time()*1000), seq[0])
    date = "2026-%02d-%02dT12:00:00Z" % (month, rnd.randint(1, 28))
    r = (tid, ORG, CAMP, rnd.choice(wallets), 'EARN', 1000000, ext, "12.50", "EUR", date, "r1", 1, "batch", "2026-11-25T00:00:00Z")
    if variant == "hash":
        key = hashlib.sha256(f"{ORG}\0EARN\0{ext}".encode()).digest()[:16]
        r = r + (key,)
    return r
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL"); db.execute(f"PRAGMA cache_size=-{CACHE}")
cols = "id, org_id, campaign_id, wallet_id, kind, amount, external_id, source_amount, currency, date, trace, rule_version, batch_id, created_at"
extra = ", idem BLOB" if variant == "hash" else ""
if not REUSE: db.execute(f"CREATE TABLE transactions (id TEXT PRIMARY KEY, org_id TEXT, campaign_id TEXT, wallet_id TEXT, kind TEXT, amount INTEGER, external_id TEXT, source_amount TEXT, currency TEXT, date TEXT, trace TEXT, rule_version INTEGER, batch_id TEXT, created_at TEXT, expires_at TEXT {extra})")
if REUSE: pass
elif variant == "text":
    db.execute("CREATE UNIQUE INDEX t_ext ON transactions (org_id, kind, external_id)")
elif variant == "hash":
    db.execute("CREATE UNIQUE INDEX t_ext ON transactions (idem)")
if not REUSE: db.execute("CREATE INDEX t_wd ON transactions (wallet_id, date, id)")
if not REUSE: db.execute("CREATE INDEX t_cd ON transactions (campaign_id, date)")
if not REUSE: db.execute("CREATE INDEX t_oc ON transactions (org_id, created_at)")
ncols = 15 if variant == "hash" else 14
ins = f"INSERT INTO transactions ({cols}{', idem' if variant=='hash' else ''}) VALUES ({','.join('?'*ncols)})"
def load(n, month, chunk=5000):
    gen = 0.0; t0 = time.time()
    for start in range(0, n, chunk):
        g = time.time(); rows = [row(month) for _ in range(min(chunk, n-start))]; gen += time.time()-g
        db.execute("BEGIN"); db.executemany(ins, rows); db.execute("COMMIT")
        if (start // chunk) % 40 == 0: db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return time.time()-t0-gen
m = 1
if REUSE: ORG = db.execute("SELECT org_id, campaign_id FROM transactions LIMIT 1").fetchone()[0]
while not REUSE and seq[0] < base_rows:
    load(min(1000000, base_rows - seq[0]), m); m += 1
t = load(file_rows, 10)
print(f"{variant} base={base_rows} file={file_rows}: {t:.1f} s db-only")
