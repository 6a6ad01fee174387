//! Every page of the operator console at the size of a large programme: 100,000 members, each
//! with a wallet, and 1,000,000 earns dated over the last 90 days (loaded as a nightly file
//! would be, through the rules, with a thousand rows refused), a catalogue of 10,000 products.
//! Each page is asked for by an owner signed in, from `CLIENTS` operators at once, for
//! `BENCH_PAGE_SECONDS` (default 5) each, after the baseline of the same run: `GET /healthz` on
//! the same listener (no session, no database).
//!
//! `cargo bench --bench console` on SQLite (or PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is
//! set); `BENCH_MEMBERS` and `BENCH_TRANSACTIONS` change the size. Goal (#62): every page under
//! 100 ms at p99.

mod common;

use std::io::Write;
use std::time::Instant;

use chrono::{DateTime, Duration, SecondsFormat, Utc};

const CLIENTS: usize = 2;
/// One earn in this many is for a wallet that does not exist: the report has rejected rows.
const REFUSED_EVERY: usize = 1_000;
const PRODUCTS: usize = 10_000;
/// Members and wallets the pages of one member are asked about, in turn.
const SAMPLED: usize = 200;

fn main() {
    rewards::arenas::limit();
    run();
}

#[tokio::main]
async fn run() {
    let members: usize = common::number("BENCH_MEMBERS", 100_000);
    let transactions: usize = common::number("BENCH_TRANSACTIONS", 1_000_000);
    let seconds: u64 = common::number("BENCH_PAGE_SECONDS", 5);

    let started = Instant::now();
    let common::Seed {
        _db,
        store,
        campaign,
        ..
    } = common::seed(members, true).await;
    let seeded = started.elapsed().as_secs_f64();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("earns.csv");
    let refused = write_earns(&file, transactions, members, store.now());
    let org = campaign.org();
    let book = store::RuleBook::new(store.programme().clone());
    let loaded = common::load(
        &store,
        &book,
        &data,
        &org,
        &file,
        (transactions - refused) as u64,
    )
    .await;
    common::analyzed(&store).await;
    let catalogue = generators::catalogue::catalogue(PRODUCTS, 1);
    let applied = store::ImportOptions {
        dry_run: false,
        replace: false,
    };
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, applied)
        .await
        .unwrap();

    let state = api::AppState::new(store.clone(), store::CodeKey::random());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let admin = admin::AdminState::new(state, data.clone());
    tokio::spawn(console::serve(listener, admin, std::future::pending()));
    let cookie = format!(
        "rewards_console={}",
        common::owner_session(&store, &base).await
    );
    let first_page = store::Page { page: 1, limit: 1 };
    let batches = store
        .batches()
        .list_batches(&org, first_page)
        .await
        .unwrap();
    let batch = batches.items[0].id.clone();
    let mut sampled = Vec::new();
    for n in 0..SAMPLED {
        let reference = format!("w-{}", (n * 7_919) % members);
        let wallet = store.ledger().get_wallet(&campaign, &reference).await;
        let wallet = wallet.unwrap();
        sampled.push((wallet.owner_id, wallet.id));
    }

    println!(
        "backend: {:?}; {members} members and wallets (seeded in {seeded:.0} s), {} earns \
         loaded in {loaded:.1} s ({refused} refused), {PRODUCTS} products; {CLIENTS} operators \
         at once, {seconds} s per page",
        store.backend(),
        transactions - refused,
    );
    let http = reqwest::Client::new();
    let first = Instant::now();
    let overview = format!("{base}/console/orgs/{}/", org.id());
    fetch(http.get(&overview).header("cookie", &cookie)).await;
    println!(
        "the overview's first look (90 days summed, then kept): {:.1} ms",
        first.elapsed().as_secs_f64() * 1000.0
    );
    println!("{}", common::HEADER);
    let healthz = format!("{base}/healthz");
    let baseline = common::drive(CLIENTS, seconds, {
        let http = http.clone();
        move |_, _| fetch(http.get(&healthz))
    })
    .await;
    println!("{}", baseline.row("baseline: GET /healthz"));

    let (o, c) = (org.id().to_owned(), campaign.id.clone());
    let in_org = |path: &str| format!("/console/orgs/{o}/{path}");
    let last_page = members.div_ceil(25);
    let pages: Vec<(&str, String)> = vec![
        ("organisations", "/console/".into()),
        ("overview", in_org("")),
        ("members", in_org("members")),
        (
            "members, middle page",
            in_org(&format!("members?page={}", last_page / 2)),
        ),
        (
            "members, last page",
            in_org(&format!("members?page={last_page}")),
        ),
        ("find by reference", in_org("members?q=m-{n}")),
        ("find by user id", in_org("members?q=u-{n}")),
        ("find by name (all match)", in_org("members?q=Ada")),
        ("find as one types (rows)", in_org("members?q=m-{n}&htmx")),
        ("member", in_org("members/{member}")),
        (
            "wallet",
            in_org(&format!("campaigns/{c}/wallets/{{wallet}}")),
        ),
        (
            "wallet, balance at a day",
            in_org(&format!("campaigns/{c}/wallets/{{wallet}}?at=2026-01-01")),
        ),
        ("adjustments", in_org("adjustments")),
        ("batch files", in_org("batches")),
        ("batch report", in_org(&format!("batches/{batch}"))),
        (
            "rejected rows (CSV)",
            in_org(&format!("batches/{batch}/rejected.csv")),
        ),
        ("mappings", in_org("mappings")),
        ("programme", in_org("programme")),
        ("rules", in_org(&format!("campaigns/{c}/rules"))),
        (
            "policy and tiers",
            in_org(&format!("campaigns/{c}/settings")),
        ),
        ("catalogue", in_org(&format!("campaigns/{c}/catalogue"))),
        (
            "catalogue, a search",
            in_org(&format!(
                "campaigns/{c}/catalogue?search=coffee&sort=price%3Aasc"
            )),
        ),
        ("reviews", in_org("reviews")),
        ("exports", in_org("exports")),
        ("API keys", in_org("keys")),
        ("SFTP", in_org("sftp")),
        ("webhooks", in_org("webhooks")),
        ("operators", "/console/operators".into()),
        ("audit trail", "/console/audit".into()),
        ("own account", "/console/account".into()),
    ];
    let mut slowest = (0.0, "");
    for (name, path) in pages {
        let (htmx, path) = match path.strip_suffix("&htmx") {
            Some(path) => (true, path.to_owned()),
            None => (false, path),
        };
        let load = common::drive(CLIENTS, seconds, {
            let (http, cookie, base) = (http.clone(), cookie.clone(), base.clone());
            let sampled = sampled.clone();
            move |client, n| {
                let (member, wallet) = &sampled[(client * 101 + n) % SAMPLED];
                let path = path
                    .replace(
                        "{n}",
                        &((client * 7_919 + n * 104_729) % members).to_string(),
                    )
                    .replace("{member}", member)
                    .replace("{wallet}", wallet);
                let mut request = http.get(format!("{base}{path}")).header("cookie", &cookie);
                if htmx {
                    request = request.header("hx-request", "true");
                }
                fetch(request)
            }
        })
        .await;
        println!("{}", load.row(name));
        if load.p99_ms > slowest.0 {
            slowest = (load.p99_ms, name);
        }
    }
    println!(
        "slowest p99: {:.1} ms ({}); goal < 100 ms",
        slowest.0, slowest.1
    );
}

/// Asks; a page must answer 200 in full.
async fn fetch(request: reqwest::RequestBuilder) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let body = response.bytes().await.unwrap();
    assert_eq!(
        status,
        reqwest::StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&body)
    );
}

/// An earn file of `rows` for wallets `w-0`... `w-{wallets - 1}`, dated evenly over the 90 days
/// before `now`; one row in `REFUSED_EVERY` is for a wallet that does not exist. How many.
fn write_earns(path: &std::path::Path, rows: usize, wallets: usize, now: DateTime<Utc>) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "id,walletId,amount,date,description,meta.store").unwrap();
    let first = now - Duration::days(90);
    let step = Duration::days(90).num_milliseconds() / rows.max(1) as i64;
    let mut refused = 0;
    for n in 0..rows {
        let wallet = if n % REFUSED_EVERY == REFUSED_EVERY - 1 {
            refused += 1;
            "no-such-wallet".to_owned()
        } else {
            format!("w-{}", (n * 48_271) % wallets)
        };
        let at = (first + Duration::milliseconds(step * n as i64))
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let amount = 1 + (n * 7) % 200;
        writeln!(
            out,
            "e-{n},{wallet},{amount}.50,{at},Weekly shop,A{}",
            n % 9
        )
        .unwrap();
    }
    out.flush().unwrap();
    refused
}
