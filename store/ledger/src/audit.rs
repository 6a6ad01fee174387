//! The audit: for every wallet, the balance must equal EARN + REFUND + TRANSFER_IN - BURN -
//! EXPIRY - REVERSAL - TRANSFER_OUT, the lifetime earned total must equal the EARN sum less what
//! reversals took off them, with what transfers moved when they moved earnings, the
//! tokens it holds by its spending position and aside rows (its lots) must add up to the
//! balance less what open holds reserve plus what it owes, what it owes to what its reversals
//! took that no lot paid, and what it holds to its open holds (each of which took its amount
//! from the lots, and a settled one nothing); tokens still pending count in the sums of
//! transactions but not the balance (nor lifetime earnings, unless they counted when
//! credited), and `pending` must equal them;
//! and, on PostgreSQL, where no foreign key checks it row by row (migration 15), every
//! transaction must belong to a wallet; and for every wallet someone asked a balance in time
//! of, that balance read through its summed days must be the sum of its history at instants
//! where a day's cut matters.

use chrono::{DateTime, Duration, Utc};

use crate::common::calendar::day_of;
use crate::fifo::lot_left;
use crate::transactions::signed_amount;
use crate::{Ledger, StoreError, Tokens};

/// One wallet whose figures do not agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discrepancy {
    pub wallet_id: String,
    /// For a check of one transaction (`lot`, `reversed`): the EARN or BURN it is about.
    pub transaction_id: Option<String>,
    /// `balance`, `earned`, `lots`, `owed`, `held` or `pending`; `hold` for a hold (`transaction_id`) whose
    /// lots taken are not its amount (open) or nothing (settled); `wallet` for transactions
    /// naming a wallet that does not exist (recorded 0, computed their net sum); `lot` for an
    /// earn whose lot is not its tokens less what was spent, held, reversed or expired plus what
    /// refunds gave back; `reversed`
    /// for an earn (or burn) whose reversals (or refunds) took (or gave) more than it holds.
    pub check: &'static str,
    /// What the wallet says.
    pub recorded: Tokens,
    /// What its transactions (or lots) add up to.
    pub computed: Tokens,
}

/// Every wallet's recorded figures beside what its transactions add up to, in one pass over
/// them: sums grouped by wallet, joined to the wallets; on PostgreSQL fully (`{outer}`,
/// `{inner}`), where a group with no wallet is a discrepancy of its own. SQLite's key refuses
/// such rows, and its plan of the full join did 2.8x the work for twice the ledger. The tokens
/// a wallet holds are its earns from its spending position on (less what is taken of the one
/// at it) and its aside rows (see `fifo`); an earn with an aside row counts by that row. `{scan}`
/// is `NOT INDEXED` on SQLite, which would otherwise read
/// the transactions in wallet order through `(wallet_id, date)`, one random row lookup each,
/// rather than in the order they are stored. SUM of BIGINT is NUMERIC on PostgreSQL: cast back,
/// so both backends give an i64.
const AUDIT: &str = concat!(
    "SELECT COALESCE(w.id, t.wallet_id), w.id IS NULL, \
     COALESCE(w.balance, 0) - COALESCE(w.held, 0) + COALESCE(w.owed, 0), COALESCE(w.earned, 0), \
     CAST(COALESCE(t.net, 0) AS BIGINT), CAST(COALESCE(t.earns, 0) AS BIGINT), \
     CAST(COALESCE(t.open, 0) + COALESCE(a.aside, 0) - CASE WHEN w.fifo_id IS NOT NULL AND NOT \
         EXISTS (SELECT 1 FROM lots_aside x WHERE x.transaction_id = w.fifo_id) \
         THEN w.fifo_taken ELSE 0 END AS BIGINT), \
     COALESCE(w.balance, 0), CAST(COALESCE(t.owed, 0) AS BIGINT), COALESCE(w.owed, 0), \
     COALESCE(w.held, 0), CAST(COALESCE(h.held, 0) AS BIGINT), \
     COALESCE(w.pending, 0), CAST(COALESCE(pe.pending, 0) AS BIGINT), \
     CAST(COALESCE(pe.uncounted, 0) AS BIGINT) \
     FROM wallets w \
     {outer} JOIN (SELECT t.wallet_id, SUM(",
    signed_amount!(),
    ") AS net, \
         SUM(CASE t.kind WHEN 'EARN' THEN t.amount \
             WHEN 'REVERSAL' THEN -t.amount - COALESCE(t.forgiven, 0) \
             WHEN 'TRANSFER_IN' THEN CASE WHEN t.earned_moved THEN t.amount ELSE 0 END \
             WHEN 'TRANSFER_OUT' THEN CASE WHEN t.earned_moved THEN -t.amount ELSE 0 END \
             ELSE 0 END) AS earns, \
         SUM(CASE WHEN t.kind = 'REVERSAL' THEN t.amount - COALESCE((SELECT SUM(s.amount) \
             FROM spends s WHERE s.transaction_id = t.id), 0) ELSE 0 END) AS owed, \
         SUM(CASE WHEN t.kind IN ('EARN', 'TRANSFER_IN') AND (p.fifo_date IS NULL \
             OR (t.date, t.id) >= (p.fifo_date, p.fifo_id)) \
             AND NOT EXISTS (SELECT 1 FROM lots_aside x WHERE x.transaction_id = t.id) \
             THEN t.amount ELSE 0 END) AS open \
         FROM transactions t{scan} {inner}JOIN wallets p ON p.id = t.wallet_id \
         GROUP BY t.wallet_id) t \
         ON t.wallet_id = w.id \
     LEFT JOIN (SELECT wallet_id, SUM(remaining) AS aside FROM lots_aside GROUP BY wallet_id) a \
         ON a.wallet_id = w.id \
     LEFT JOIN (SELECT wallet_id, SUM(amount) AS held FROM holds WHERE status = 'held' \
         GROUP BY wallet_id) h ON h.wallet_id = w.id \
     LEFT JOIN (SELECT wallet_id, SUM(amount) AS pending, \
         SUM(CASE WHEN counted THEN 0 ELSE amount END) AS uncounted FROM pending_earns \
         WHERE status = 'pending' GROUP BY wallet_id) pe ON pe.wallet_id = w.id \
     ORDER BY 1"
);

/// `AUDIT` for `store`'s backend.
fn audit_sql(store: &Ledger) -> String {
    let (scan, outer, inner) = store.dialect((" NOT INDEXED", "LEFT", ""), ("", "FULL", "LEFT "));
    AUDIT
        .replace("{scan}", scan)
        .replace("{outer}", outer)
        .replace("{inner}", inner)
}

/// The audit: every wallet's balance against the sum of its transactions (operator-wide).
impl Ledger {
    /// Checks every wallet; an empty list means the ledger agrees with itself.
    #[tracing::instrument(skip_all)]
    pub async fn audit(&self) -> Result<Vec<Discrepancy>, StoreError> {
        type Row = (
            String,
            bool,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
        );
        let rows: Vec<Row> = self.read_rows(&audit_sql(self), params![]).await?;
        let mut found = Vec::new();
        for (
            wallet,
            missing,
            in_lots,
            earned,
            net,
            earns,
            lots,
            balance,
            unpaid,
            owed,
            held,
            holds,
            pending,
            pending_earns,
            uncounted,
        ) in rows
        {
            if missing {
                found.push(Discrepancy {
                    wallet_id: wallet,
                    transaction_id: None,
                    check: "wallet",
                    recorded: Tokens::ZERO,
                    computed: Tokens::from_micros(net),
                });
                continue;
            }
            // Pending tokens are in the journal but not the balance; those not counted
            // toward lifetime earnings yet are not in `earned` either.
            for (check, recorded, computed) in [
                ("balance", balance, net - pending_earns),
                ("earned", earned, earns - uncounted),
                ("pending", pending, pending_earns),
                ("lots", in_lots, lots),
                ("owed", owed, unpaid),
                ("held", held, holds),
            ] {
                if recorded != computed {
                    found.push(Discrepancy {
                        wallet_id: wallet.clone(),
                        transaction_id: None,
                        check,
                        recorded: Tokens::from_micros(recorded),
                        computed: Tokens::from_micros(computed),
                    });
                }
            }
        }
        found.extend(self.audit_lots().await?);
        found.extend(self.audit_days().await?);
        found.extend(self.audit_instants().await?);
        Ok(found)
    }

    /// Each earn's lot against its history, and each earn and burn against its corrections:
    /// only the earns recorded since burns record what they take from each lot (migration 17),
    /// the others' spends being unknown.
    async fn audit_lots(&self) -> Result<Vec<Discrepancy>, StoreError> {
        let since: Option<(String,)> = self
            .read_row(RECORDED_SINCE, params![SPENDS_RECORDED])
            .await?;
        let since = since
            .and_then(|(text,)| installed_on(&text))
            .ok_or_else(|| StoreError::NotCommitted("migration 17 has no time".into()))?;
        let earn_of_expiry = self.dialect(
            "substr(external_id, 5, instr(substr(external_id, 5) || ':', ':') - 1)",
            "split_part(external_id, ':', 2)",
        );
        // In stored order on SQLite, as `AUDIT` reads them (see there).
        let scan = self.dialect(" NOT INDEXED", "");
        let lots = LOTS
            .replace("{earn_of_expiry}", earn_of_expiry)
            .replace("{scan}", scan);
        let mut found = Vec::new();
        let rows: Vec<(String, String, i64, i64)> = self.read_rows(&lots, params![since]).await?;
        for (wallet, earn, lot, computed) in rows {
            found.push(Discrepancy {
                wallet_id: wallet,
                transaction_id: Some(earn),
                check: "lot",
                recorded: Tokens::from_micros(lot),
                computed: Tokens::from_micros(computed),
            });
        }
        let rows: Vec<(String, String, i64, i64)> = self.read_rows(HOLDS, params![]).await?;
        for (wallet, hold, taken, amount) in rows {
            found.push(Discrepancy {
                wallet_id: wallet,
                transaction_id: Some(hold),
                check: "hold",
                recorded: Tokens::from_micros(taken),
                computed: Tokens::from_micros(amount),
            });
        }
        let rows: Vec<(String, String, i64, i64)> = self.read_rows(OVER, params![]).await?;
        for (wallet, original, corrected, amount) in rows {
            found.push(Discrepancy {
                wallet_id: wallet,
                transaction_id: Some(original),
                check: "reversed",
                recorded: Tokens::from_micros(corrected),
                computed: Tokens::from_micros(amount),
            });
        }
        Ok(found)
    }
}

/// The migration from which burns record their lots (`spends`).
const SPENDS_RECORDED: i64 = 17;
const RECORDED_SINCE: &str =
    "SELECT CAST(installed_on AS TEXT) FROM _sqlx_migrations WHERE version = $1";

/// A migration's time as each backend's text gives it (SQLite `2026-11-27 23:51:02`,
/// PostgreSQL `2026-11-27 23:51:02.123456+00`).
fn installed_on(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{DateTime, NaiveDateTime};
    let text = text.trim();
    DateTime::parse_from_str(&format!("{text}00"), "%Y-%m-%d %H:%M:%S%.f%z")
        .map(|t| t.to_utc())
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc())
        })
}

/// The earns recorded since `$1` whose lot (by the wallet's position and aside rows, as in
/// `fifo`) is not their tokens less what is pending still, what spends took (burns, orders,
/// reversals, debts paid, open holds: a spend without a transaction is a hold's) and
/// what expired (EXPIRY `lot:<earn>[:<id>]`), plus what refunds gave back: wallet, earn, the lot,
/// what it should be. The history is one aggregate by earn (SQLite indexes it for the join).
const LOTS: &str = concat!(
    "SELECT wallet_id, id, lot, computed FROM (SELECT t.wallet_id, t.id, ",
    lot_left!(),
    " AS lot, CAST(t.amount - COALESCE(h.taken, 0) + COALESCE(h.given, 0) \
         - COALESCE(pe.amount, 0) AS BIGINT) AS computed \
     FROM transactions t{scan} JOIN wallets w ON w.id = t.wallet_id \
     LEFT JOIN lots_aside a ON a.transaction_id = t.id \
     LEFT JOIN pending_earns pe ON pe.transaction_id = t.id AND pe.status = 'pending' \
     LEFT JOIN (SELECT earn_id, SUM(taken) AS taken, SUM(given) AS given FROM ( \
         SELECT s.earn_id AS earn_id, \
             CASE WHEN c.kind = 'REFUND' THEN 0 ELSE s.amount END AS taken, \
             CASE WHEN c.kind = 'REFUND' THEN s.amount ELSE 0 END AS given \
         FROM spends s LEFT JOIN transactions c ON c.id = s.transaction_id \
         UNION ALL SELECT {earn_of_expiry}, amount, 0 FROM transactions WHERE kind = 'EXPIRY' \
         ) d GROUP BY earn_id) h ON h.earn_id = t.id \
     WHERE t.kind IN ",
    crate::transactions::lot_kinds!(),
    " AND t.created_at >= $1) e WHERE lot <> computed ORDER BY 1, 2"
);

/// Holds whose lots taken (their spends) are not their amount while open, or not nothing once
/// settled: wallet, hold, what its spends add up to, what they should.
const HOLDS: &str = "SELECT h.wallet_id, h.id, CAST(COALESCE(SUM(s.amount), 0) AS BIGINT), \
     CASE WHEN h.status = 'held' THEN h.amount ELSE 0 END FROM holds h \
     LEFT JOIN spends s ON s.transaction_id = h.id GROUP BY h.wallet_id, h.id, h.status, h.amount \
     HAVING COALESCE(SUM(s.amount), 0) <> CASE WHEN h.status = 'held' THEN h.amount ELSE 0 END \
     ORDER BY 1, 2";

/// Earns (and burns) whose reversals (refunds) took (gave) back more than they hold: wallet,
/// the original, what its corrections add up to, its amount.
const OVER: &str = "SELECT o.wallet_id, o.id, CAST(SUM(c.amount + COALESCE(c.forgiven, 0)) \
     AS BIGINT), o.amount FROM transactions c JOIN transactions o ON o.id = c.corrects \
     WHERE c.corrects IS NOT NULL GROUP BY o.wallet_id, o.id, o.amount \
     HAVING SUM(c.amount + COALESCE(c.forgiven, 0)) > o.amount ORDER BY 1, 2";

/// Each wallet's summed days (see `in_time`) against its transactions dated before the day its
/// mark says they hold to (`{cut}`: the first instant of `summed_to`'s day), for the wallets
/// someone asked a balance in time of.
const DAYS: &str = concat!(
    "SELECT w.id, CAST(COALESCE((SELECT SUM(d.net) FROM balance_days d \
       WHERE d.wallet_id = w.id AND d.day < {cut}), 0) AS BIGINT), \
     CAST(COALESCE((SELECT SUM(",
    signed_amount!(),
    ") FROM transactions t WHERE t.wallet_id = w.id AND t.date < {cut}), 0) AS BIGINT) \
     FROM wallets w WHERE w.summed_to IS NOT NULL ORDER BY 1"
);

impl Ledger {
    /// The wallets whose summed days do not add up to their transactions (`days`): a write
    /// dated before them that did not mark them stale.
    async fn audit_days(&self) -> Result<Vec<Discrepancy>, StoreError> {
        let sql = DAYS.replace("{cut}", &self.day_of_sql("w.summed_to"));
        let rows: Vec<(String, i64, i64)> = self.read_rows(&sql, params![]).await?;
        Ok(rows
            .into_iter()
            .filter(|(_, summed, dated)| summed != dated)
            .map(|(wallet, summed, dated)| Discrepancy {
                wallet_id: wallet,
                transaction_id: None,
                check: "days",
                recorded: Tokens::from_micros(summed),
                computed: Tokens::from_micros(dated),
            })
            .collect())
    }
}

/// The wallets someone asked a balance in time of, with the instants their answers are checked
/// at: the end of their summed days, and just before their first transaction and their last one
/// within the summed days (a balance past them sums the days first).
const SUMMED: &str = "SELECT w.id, w.summed_to, (SELECT MIN(date) FROM transactions t \
     WHERE t.wallet_id = w.id), (SELECT MAX(date) FROM transactions t WHERE t.wallet_id = w.id \
     AND t.date < w.summed_to) FROM wallets w WHERE w.summed_to IS NOT NULL ORDER BY 1";

/// Wallet `$1`'s transactions dated by `$3` as a balance in time adds them (its summed days
/// before `$2`, the first instant of `$3`'s day, then the transactions from there), and as
/// they are, in one snapshot.
const AT_BOTH_WAYS: &str = concat!(
    "SELECT CAST(COALESCE((SELECT SUM(net) FROM balance_days WHERE wallet_id = $1 AND day < $2), \
       0) + COALESCE((SELECT SUM(",
    signed_amount!(),
    ") FROM transactions WHERE wallet_id = $1 AND date >= $2 AND date <= $3), 0) AS BIGINT), \
     CAST(COALESCE((SELECT SUM(",
    signed_amount!(),
    ") FROM transactions WHERE wallet_id = $1 AND date <= $3), 0) AS BIGINT)"
);

impl Ledger {
    /// The wallets whose balance at an instant, read as `balance_at` reads it (through the
    /// summed days, cut where `day_of` cuts), is not the sum of their history by then (`at`).
    async fn audit_instants(&self) -> Result<Vec<Discrepancy>, StoreError> {
        type Summed = (
            String,
            DateTime<Utc>,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
        );
        let wallets: Vec<Summed> = self.read_rows(SUMMED, params![]).await?;
        let before = |at: DateTime<Utc>| at.checked_sub_signed(Duration::microseconds(1));
        let mut found = Vec::new();
        for (wallet, summed_to, first, last) in wallets {
            let instants = [
                before(summed_to),
                first.and_then(before),
                last.and_then(before),
            ];
            let summed = instants.into_iter().flatten();
            for at in summed.filter(|at| day_of(*at) <= day_of(summed_to)) {
                let (read, summed): (i64, i64) = self
                    .read_row(AT_BOTH_WAYS, params![&wallet, day_of(at), at])
                    .await?
                    .unwrap_or((0, 0));
                if read != summed {
                    found.push(Discrepancy {
                        wallet_id: wallet.clone(),
                        transaction_id: None,
                        check: "at",
                        recorded: Tokens::from_micros(read),
                        computed: Tokens::from_micros(summed),
                    });
                    break;
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wallet whose balance was changed behind the ledger's back is reported.
    async fn a_tampered_balance_is_found(store: Ledger) {
        let (_, wallet) = crate::testing::wallet_fixture(&store).await;
        assert!(store.audit().await.unwrap().is_empty());
        store
            .execute(
                "UPDATE wallets SET balance = 7000000 WHERE id = $1",
                params![wallet.id],
            )
            .await
            .unwrap();
        let found = store.audit().await.unwrap();
        let checks: Vec<_> = found
            .iter()
            .map(|d| (d.wallet_id.as_str(), d.check))
            .collect();
        assert_eq!(
            checks,
            [
                (wallet.id.as_str(), "balance"),
                (wallet.id.as_str(), "lots")
            ]
        );
        assert_eq!(found[0].recorded, Tokens::whole(7));
    }

    /// Adds wallets `first..last` beside `like` (same campaign and owner), each with `EARNS`
    /// earns of one token, nothing spent, written by the database itself: a ledger big enough
    /// to tell one pass from a pass per wallet, in a moment.
    async fn grow(store: &Ledger, like: &crate::Wallet, first: i64, last: i64) {
        const EARNS: i64 = 20;
        const ROWS: &str = "WITH RECURSIVE n(i) AS (SELECT CAST($2 AS BIGINT) UNION ALL \
                 SELECT i + 1 FROM n WHERE i + 1 < $3), \
             e(j) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT j + 1 FROM e WHERE j < $4)";
        let statements = [
            "INSERT INTO wallets (id, org_id, campaign_id, owner_id, external_id, currency, \
                 balance, earned, created_at, updated_at) \
             SELECT 'aw' || n.i, w.org_id, w.campaign_id, w.owner_id, 'ax' || n.i, w.currency, \
                 $4 * 1000000, $4 * 1000000, w.created_at, w.updated_at \
             FROM n, wallets w WHERE w.id = $1",
            "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
                 external_id, currency, date, created_at) \
             SELECT 'at' || n.i || '-' || e.j, w.org_id, w.campaign_id, 'aw' || n.i, 'EARN', \
                 1000000, 'at' || n.i || '-' || e.j, w.currency, w.created_at, w.created_at \
             FROM n, e, wallets w WHERE w.id = $1",
        ];
        for statement in statements {
            let sql = format!("{ROWS} {statement}");
            store
                .execute(&sql, params![like.id, first, last, EARNS])
                .await
                .unwrap();
        }
    }

    /// How much work the audit's query does, as the backend counts it.
    async fn work(store: &Ledger) -> u64 {
        store.query_work(&audit_sql(store)).await
    }

    /// Twice the wallets and twice the rows: about twice the work, not four times (a sum per
    /// wallet over every lot grows with wallets x lots).
    async fn the_audit_is_one_pass_over_the_ledger(store: Ledger) {
        let (_, wallet) = crate::testing::wallet_fixture(&store).await;
        grow(&store, &wallet, 0, 150).await;
        let small = work(&store).await;
        grow(&store, &wallet, 150, 300).await;
        let large = work(&store).await;
        assert!(
            store.audit().await.unwrap().is_empty(),
            "the grown ledger agrees"
        );
        let growth = large as f64 / small as f64;
        assert!(
            growth < 2.6,
            "audit work grew {growth:.2}x for twice the ledger ({small} -> {large})"
        );
    }

    /// A journal row naming a wallet that does not exist: on SQLite its key refuses it, on
    /// PostgreSQL (no key: migration 15) the audit reports it.
    async fn transactions_of_a_missing_wallet_are_refused_or_found(store: Ledger) {
        let (_, wallet) = crate::testing::wallet_fixture(&store).await;
        const ORPHAN: &str = "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, \
                 kind, amount, external_id, currency, date, created_at) \
             SELECT 'orphan', org_id, campaign_id, 'gone', 'EARN', 2500000, 'orphan', currency, \
                 created_at, created_at FROM wallets WHERE id = $1";
        let inserted = store.execute(ORPHAN, params![wallet.id]).await;
        let found = store.audit().await.unwrap();
        if store.backend() == crate::Backend::Sqlite {
            let refused = inserted
                .expect_err("SQLite's key refuses the row")
                .to_string();
            assert!(refused.contains("FOREIGN KEY"), "{refused}");
            assert_eq!(found, []);
            return;
        }
        inserted.unwrap();
        assert_eq!(
            found,
            [Discrepancy {
                wallet_id: "gone".into(),
                transaction_id: None,
                check: "wallet",
                recorded: Tokens::ZERO,
                computed: Tokens::from_micros(2_500_000),
            }]
        );
    }

    /// A lot that does not follow from its earn's history, and an earn reversed beyond its
    /// tokens, are each reported with the earn.
    async fn a_lot_or_a_reversal_that_does_not_add_up_is_found(store: Ledger) {
        let (campaign, wallet) = crate::testing::wallet_fixture(&store).await;
        let book = crate::RuleBook::new(store.programme().clone());
        let earn = crate::EarnInput {
            activity: None,
            earn_id: "e-1".into(),
            wallet: wallet.id.clone(),
            amount: "10".into(),
            date: store.now(),
            description: None,
            comment: None,
            meta: None,
        };
        let request = store.submit_earn(&campaign, earn).await.unwrap();
        while store.process_earns(&book, 10).await.unwrap() > 0 {}
        let earn = store.earn_request(&campaign, &request.id).await.unwrap();
        let earn = earn.transaction_id.unwrap();
        let burn = crate::NewBurn {
            spend: crate::Spend {
                wallet: wallet.id.clone(),
                external_id: "b-1".into(),
                amount: Tokens::whole(4),
                description: "Voucher".into(),
                comment: None,
                meta: None,
            },
            date: None,
        };
        let burned = store.burn(&campaign, burn).await.unwrap().transaction.id;
        let returned = crate::NewCorrection {
            transaction_id: earn.clone(),
            external_id: "r-1".into(),
            amount: Some(2.into()),
            description: None,
            comment: None,
            meta: None,
        };
        let returned = store.correct(&campaign, returned).await.unwrap();
        assert!(store.audit().await.unwrap().is_empty());

        // The burn's record of what it took says 1 more than the lot lost.
        const SPENT_MORE: &str = "UPDATE spends SET amount = amount + 1000000 \
             WHERE transaction_id = $1";
        store.execute(SPENT_MORE, params![burned]).await.unwrap();
        let found = store.audit().await.unwrap();
        let lot = found.iter().find(|d| d.check == "lot").expect("the lot");
        assert_eq!(lot.transaction_id.as_deref(), Some(earn.as_str()));
        assert_eq!(
            (lot.recorded, lot.computed),
            (Tokens::whole(4), Tokens::whole(3))
        );
        store
            .execute(
                "UPDATE spends SET amount = amount - 1000000 WHERE transaction_id = $1",
                params![burned],
            )
            .await
            .unwrap();
        // A reversal that forgave more than the earn held.
        const FORGAVE: &str = "UPDATE transactions SET forgiven = 9000000 WHERE id = $1";
        store
            .execute(FORGAVE, params![returned.transaction.id])
            .await
            .unwrap();
        let found = store.audit().await.unwrap();
        let over = found.iter().find(|d| d.check == "reversed").expect("over");
        assert_eq!(over.transaction_id.as_deref(), Some(earn.as_str()));
        assert_eq!(
            (over.recorded, over.computed),
            (Tokens::whole(11), Tokens::whole(10))
        );
    }

    crate::testing::ledger_tests!(
        a_lot_or_a_reversal_that_does_not_add_up_is_found,
        transactions_of_a_missing_wallet_are_refused_or_found,
        a_tampered_balance_is_found,
        the_audit_is_one_pass_over_the_ledger
    );
}
