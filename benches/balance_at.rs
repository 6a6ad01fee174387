//! A wallet's balance at a past instant, for a wallet with 100,000 transactions dated over
//! three years, on SQLite (or PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set): the first
//! answer (which sums the wallet's past days), the first after a burn dated a year back (which
//! sums that year again), then answers at random instants through the store and over HTTP,
//! beside the baseline of the same run: the plain sum of the wallet's transactions dated up to
//! the instant through its index, by the database alone.
//!
//! `cargo bench --bench balance_at`. Goal: < 5 ms for a balance at a date.

mod common;

use std::time::Instant;

use axum::http::StatusCode;
use chrono::{DateTime, Duration, DurationRound, SecondsFormat, Utc};

const TRANSACTIONS: usize = 100_000;
const YEARS: i64 = 3;
const WALLETS: usize = 2;

fn main() {
    rewards::arenas::limit();
    run();
}

fn text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// The instant of a scenario's `n`th request: spread over the three years, the same sequence
/// in every scenario.
fn instant(first: DateTime<Utc>, n: usize) -> DateTime<Utc> {
    let span = Duration::days(365 * YEARS).num_seconds() as u64;
    let step = (n as u64).wrapping_mul(2_654_435_761) % span;
    first + Duration::seconds(step as i64)
}

#[tokio::main]
async fn run() {
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(WALLETS, true).await;
    let seconds = common::seconds();
    // Whole seconds: what the bench writes as text and what it asks about are the same instant
    // to the microsecond on both backends.
    let first = (Utc::now() - Duration::days(365 * YEARS))
        .duration_trunc(Duration::seconds(1))
        .unwrap();
    let every = Duration::days(365 * YEARS).num_milliseconds() / TRANSACTIONS as i64;
    let mut ids = Vec::new();
    for w in 0..WALLETS {
        let wallet = store
            .ledger()
            .get_wallet(&campaign, &format!("w-{w}"))
            .await
            .unwrap();
        // Two earns of a token to a burn of half a token, one every 16 minutes or so.
        for chunk in 0..TRANSACTIONS / 1_000 {
            let rows: Vec<String> = (chunk * 1_000..(chunk + 1) * 1_000)
                .map(|i| {
                    let at = text(first + Duration::milliseconds(every * i as i64));
                    let (kind, amount) = if i % 3 == 2 {
                        ("BURN", 500_000)
                    } else {
                        ("EARN", 1_000_000)
                    };
                    format!(
                        "('bt-{w}-{i}', '{}', '{}', '{}', '{kind}', {amount}, 'bt-{w}-{i}', \
                         'PTS', '{at}', '{at}')",
                        campaign.org_id, campaign.id, wallet.id
                    )
                })
                .collect();
            let sql = format!(
                "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
                 external_id, currency, date, created_at) VALUES {}",
                rows.join(", ")
            );
            store.execute_raw(&sql).await.unwrap();
        }
        ids.push(wallet.id);
    }
    // What the transactions add up to (two earns of a token to a burn of half a token), for
    // the burn below to find.
    let balance = (TRANSACTIONS as i64 / 3 * 2 + 1) * 1_000_000 - TRANSACTIONS as i64 / 3 * 500_000;
    store
        .execute_raw(&format!("UPDATE wallets SET balance = {balance}"))
        .await
        .unwrap();
    store.execute_raw("ANALYZE").await.unwrap();
    println!(
        "backend: {:?}; {WALLETS} wallets of {TRANSACTIONS} transactions over {YEARS} years; \
         one client",
        store.backend()
    );

    let mut firsts = Vec::new();
    for w in 0..WALLETS {
        let started = Instant::now();
        store
            .ledger()
            .balance_at(&campaign, &format!("w-{w}"), Utc::now())
            .await
            .unwrap();
        firsts.push(format!(
            "{:.1} ms",
            started.elapsed().as_secs_f64() * 1000.0
        ));
    }
    println!(
        "first answer of each wallet, now (sums its three years of days): {}",
        firsts.join(", ")
    );
    let burn = store::NewBurn {
        spend: store::Spend {
            wallet: "w-0".into(),
            external_id: "dated-back".into(),
            amount: store::Tokens::whole(1),
            description: "A burn dated a year back".into(),
            comment: None,
            meta: None,
        },
        date: Some(Utc::now() - Duration::days(365)),
    };
    store.ledger().burn(&campaign, burn).await.unwrap();
    let started = Instant::now();
    store
        .ledger()
        .balance_at(&campaign, "w-0", Utc::now())
        .await
        .unwrap();
    println!(
        "first answer after a burn dated a year back (sums that year again): {:.1} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    println!("{}", common::HEADER);

    // The answers must agree with the plain sum; checked on a sample before timing anything.
    let plain = |wallet: &str, at: DateTime<Utc>| {
        format!(
            "SELECT CAST(COALESCE(SUM(CASE kind WHEN 'EARN' THEN amount ELSE -amount END), 0) \
             AS TEXT) FROM transactions WHERE wallet_id = '{wallet}' AND date <= '{}'",
            text(at)
        )
    };
    for n in 0..50 {
        let at = instant(first, n);
        let found = store
            .ledger()
            .balance_at(&campaign, "w-0", at)
            .await
            .unwrap();
        let sum = store.stored_bytes(&plain(&ids[0], found.at)).await;
        let sum: i64 = String::from_utf8(sum[0].clone()).unwrap().parse().unwrap();
        assert_eq!(
            found.balance.to_decimal(),
            rules::Decimal::new(sum, 6),
            "at {at}"
        );
    }

    let baseline = {
        let (store, wallet) = (store.clone(), ids[0].clone());
        common::drive(1, seconds, move |_, n| {
            let sql = plain(&wallet, instant(first, n));
            let store = store.clone();
            async move {
                assert_eq!(store.stored_bytes(&sql).await.len(), 1);
            }
        })
        .await
    };
    println!("{}", baseline.row("baseline: plain sum (database)"));

    let alone = {
        let (store, campaign) = (store.clone(), campaign.clone());
        common::drive(1, seconds, move |_, n| {
            let (store, campaign) = (store.clone(), campaign.clone());
            async move {
                let at = instant(first, n);
                store
                    .ledger()
                    .balance_at(&campaign, "w-0", at)
                    .await
                    .unwrap();
            }
        })
        .await
    };
    println!("{}", alone.row("Ledger::balance_at"));

    let base = common::serve(&store).await;
    let client = reqwest::Client::new();
    let http = {
        let (k, s) = (key.key.api_key.clone(), key.secret.clone());
        common::drive(1, seconds, move |_, n| {
            let at = instant(first, n).to_rfc3339_opts(SecondsFormat::Micros, true);
            let request = client
                .get(format!("{base}/v1/wallets/w-1/balance?at={at}"))
                .header("x-api-key", &k)
                .header("x-api-secret", &s);
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
            }
        })
        .await
    };
    println!("{}", http.row("GET /v1/wallets/{id}/balance?at="));
}
