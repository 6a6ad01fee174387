//! PostgreSQL: a transfer in one statement after the sender's snapshot read (`spend::at_once`),
//! no explicit transaction, tried before the locked step (`Transferring::transfer`: a dozen
//! round trips under both wallets' locks).
//!
//! `SEND` locks both wallets in id order, as the locked step does, and goes on only if the
//! sender's row is still the version read, what it may spend covers the amount, the receiver
//! stays under the ceiling and no refusal holds the key: then the debit, the credit, the
//! TRANSFER_OUT, its TRANSFER_INs (one per expiry date among the lots taken, each behind the
//! receiver's position set aside as the locked step does), what it took from each lot and the
//! events, all or nothing. A repeated `externalId` fails on the unique key, undoing the
//! statement; the caller's locked step answers the repeat. A campaign with a daily cap takes
//! the locked step (what was sent today is counted under the sender's lock).

use sqlx::PgConnection;

use super::{Transferred, Transferring, transfer_of};
use crate::credit::sooner;
use crate::spend::at_once::{Snapshot, takes};
use crate::transactions::{entry_columns, unsum};
use crate::{StoreError, Tokens, TransactionKind};
use events::{EventType, NewEvent};

/// The transfer of the TRANSFER_OUT (`INSERT_TRANSACTION`'s parameters: `$6` from `$4` at
/// `$16`) to wallet `$21`, if the sender is still version `$22`, keeps `$23` and the receiver
/// stays within `$26` (`Tokens::MAX`); `$24` of lifetime earnings moved (`$25`: whether they
/// move), the sender's position moved to (`$27`, `$28`, `$29`) when given, the receiver's next
/// expiry to `$30` if sooner; what it took from each earn (`$31`, `$32`), its TRANSFER_INs
/// (`$33`...`$37`: ids, amounts, external ids, expiries, keys) and the events (`$38`...`$40`:
/// ids, subjects, data; `$41` their type). Whether it was made.
const SEND: &str = concat!(
    "WITH locked AS MATERIALIZED (SELECT id, xmin::text::bigint AS version, balance, held, \
       earned, fifo_date, fifo_id FROM wallets WHERE id IN ($4, $21) ORDER BY id FOR UPDATE), \
     ok AS MATERIALIZED (SELECT r.fifo_date, r.fifo_id FROM locked s, locked r \
       WHERE s.id = $4 AND r.id = $21 AND s.version = $22 AND s.balance - s.held - $6 >= $23 \
         AND r.balance <= $26 - $6 AND r.earned <= $26 - $24 \
         AND NOT EXISTS (SELECT FROM refusals WHERE idem_key = $20)), \
     sent AS (UPDATE wallets SET balance = balance - $6, earned = earned - $24, \
       updated_at = $16, ",
    unsum!("$13"),
    ", fifo_date = COALESCE($27, fifo_date), fifo_id = COALESCE($28, fifo_id), \
       fifo_taken = COALESCE($29, fifo_taken), tier_id = ",
    tier_for!("wallets.earned - $24"),
    " WHERE id = $4 AND EXISTS (SELECT FROM ok)), \
     received AS (UPDATE wallets SET balance = balance + $6, earned = earned + $24, \
       updated_at = $16, ",
    unsum!("$13"),
    ", expires_next = ",
    sooner!("$30::timestamptz"),
    ", tier_id = ",
    tier_for!("wallets.earned + $24"),
    " WHERE id = $21 AND EXISTS (SELECT FROM ok)), \
     claim AS (INSERT INTO transactions (",
    entry_columns!(),
    ", corrects, earned_moved) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
       $14, $15, $16, $17, $18, $19, $20, NULL, $25 WHERE EXISTS (SELECT FROM ok)), \
     legs AS (INSERT INTO transactions (",
    entry_columns!(),
    ", corrects, earned_moved) SELECT l.id, $2, $3, $21, 'TRANSFER_IN', l.amount, l.external_id, \
       $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, l.expires_at, l.idem_key, $1, $25 \
       FROM unnest($33::text[], $34::bigint[], $35::text[], $36::timestamptz[], $37::bytea[]) \
         AS l(id, amount, external_id, expires_at, idem_key) \
       WHERE EXISTS (SELECT FROM ok)), \
     aside AS (INSERT INTO lots_aside (transaction_id, wallet_id, earned_at, remaining, \
       expires_at) SELECT l.id, $21, $13, l.amount, l.expires_at \
       FROM unnest($33::text[], $34::bigint[], $36::timestamptz[]) AS l(id, amount, expires_at), \
         ok WHERE (ok.fifo_date, ok.fifo_id) > ($13, l.id)), \
     spent AS (INSERT INTO spends (transaction_id, earn_id, amount) \
       SELECT $1, t.earn, t.amount FROM unnest($31::text[], $32::bigint[]) AS t(earn, amount) \
       WHERE EXISTS (SELECT FROM ok)), \
     event AS (INSERT INTO events (",
    events::event_columns!(),
    ") SELECT e.id, $2, $3, $41, e.subject, $16, e.data \
       FROM unnest($38::text[], $39::text[], $40::text[]) AS e(id, subject, data) \
       WHERE EXISTS (SELECT FROM ok)) \
     SELECT EXISTS (SELECT FROM ok)"
);

impl Transferring {
    /// Makes the transfer from what `snapshot` read of the sender if it can without a lock
    /// (see the module): `None` when the caller must take the locked step, nothing written.
    pub(super) async fn at_once(
        &self,
        conn: &mut PgConnection,
        snapshot: Snapshot,
    ) -> Result<Option<Transferred>, StoreError> {
        let t = &self.transfer;
        let amount = t.amount.micros();
        if self.daily_cap.is_some() {
            return Ok(None);
        }
        let Some((version, spent)) = snapshot.take(amount, self.min_balance) else {
            return Ok(None);
        };
        let from = self.from.as_str();
        let out = self.transaction(
            TransactionKind::TransferOut,
            from,
            amount,
            t.external_id.clone(),
        );
        let legs = self.legs(&out, &spent);
        let moved = if self.move_earned { amount } else { 0 };
        let (earns, taken) = takes(&spent);
        let to = spent.position.as_ref();
        let soonest = legs.iter().filter_map(|(_, expires_at)| *expires_at).min();

        let (mut ids, mut amounts, mut keys_in, mut expiries, mut keys) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (leg, expires_at) in &legs {
            let mut entry = leg.entry(&self.org_id, &self.campaign_id, &self.fingerprint.text);
            entry.expires_at = *expires_at;
            keys.push(entry.idem_key());
            ids.push(leg.id.clone());
            amounts.push(leg.amount.micros());
            keys_in.push(leg.external_id.clone().unwrap_or_default());
            expiries.push(*expires_at);
        }
        let (mut event_ids, mut subjects, mut data) = (Vec::new(), Vec::new(), Vec::new());
        let kind = EventType::TransactionCreated;
        for side in std::iter::once(&out).chain(legs.iter().map(|(leg, _)| leg)) {
            let event = NewEvent::new(&self.org_id, Some(&self.campaign_id), kind, side, self.at)?;
            event_ids.push(event.id);
            subjects.push(event.subject_id);
            data.push(event.data);
        }

        let entry = out.entry(&self.org_id, &self.campaign_id, &self.fingerprint.text);
        let key = entry.idem_key();
        let mut write = sqlx::query_as(SEND);
        for arg in entry.args(&key, None) {
            write = write.bind(arg);
        }
        let (made,): (bool,) = write
            .bind(&self.to)
            .bind(version)
            .bind(self.min_balance)
            .bind(moved)
            .bind(self.move_earned)
            .bind(Tokens::MAX.micros())
            .bind(to.map(|p| p.date))
            .bind(to.map(|p| p.id.as_str()))
            .bind(to.map(|p| p.taken))
            .bind(soonest)
            .bind(earns)
            .bind(taken)
            .bind(ids)
            .bind(amounts)
            .bind(keys_in)
            .bind(expiries)
            .bind(keys)
            .bind(event_ids)
            .bind(subjects)
            .bind(data)
            .bind(kind.as_str())
            .fetch_one(conn)
            .await?;
        if !made {
            return Ok(None);
        }
        let to = self.to.clone();
        let legs = legs
            .into_iter()
            .map(|(leg, expires_at)| {
                let amount = leg.amount.micros();
                (leg.id, to.clone(), amount, expires_at, self.move_earned)
            })
            .collect();
        Ok(Some(Transferred {
            transfer: transfer_of(out, legs)?,
            replayed: false,
        }))
    }
}
