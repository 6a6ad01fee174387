//! The chain that makes the trail tamper-evident: each entry's hash is SHA-256 over its fields
//! and the hash of the entry before it, and the head row keeps the last entry's number and hash.
//! `verify` walks the chain in order and names each entry that was edited, removed or moved.
//!
//! Appends are serialised by the head row (`UPDATE ... RETURNING` locks it until the
//! transaction ends), so two operators' changes on PostgreSQL never chain to the same entry.

use chrono::{DateTime, SubsecRound, Utc};
use sha2::{Digest, Sha256};

use super::{Action, Actor};
use crate::backend::Tx;
use crate::{Db, StoreError};

/// The hash the first entry follows.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How many entries the walk reads at a time.
const STEP: i64 = 1_000;

/// How many problems a walk names before it stops looking.
pub const PROBLEMS_AT_MOST: usize = 100;

row_struct! {
    /// An entry as stored.
    #[derive(Debug, Clone, serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Entry {
        seq: i64,
        at: DateTime<Utc>,
        actor_kind: String,
        actor_id: Option<String>,
        actor_name: String,
        operation: String,
        org_id: Option<String>,
        target: Option<String>,
        before: Option<String>,
        after: Option<String>,
        address: Option<String>,
        user_agent: Option<String>,
        request_id: Option<String>,
        outcome: String,
        prev_hash: String,
        hash: String,
    }
}

/// The columns of `Entry`, in its order.
pub const COLUMNS: &str = "seq, at, actor_kind, actor_id, actor_name, operation, org_id, \
     target, before, after, address, user_agent, request_id, outcome, prev_hash, hash";

impl Entry {
    /// The hash of this entry's fields and its predecessor's hash. The entry's number is not
    /// in it: its place is where its predecessor's hash puts it.
    pub fn digest(&self) -> String {
        let fields = serde_json::json!([
            self.at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            self.actor_kind,
            self.actor_id,
            self.actor_name,
            self.operation,
            self.org_id,
            self.target,
            self.before,
            self.after,
            self.address,
            self.user_agent,
            self.request_id,
            self.outcome,
            self.prev_hash,
        ]);
        let digest = Sha256::digest(fields.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Appends the entry for `action` by `actor` with `outcome`, at `at`, in `tx`.
pub async fn append<T: Tx>(
    tx: &mut T,
    actor: &Actor,
    action: &Action,
    outcome: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let head: Option<(i64, String)> = tx
        .row(
            "UPDATE audit_head SET seq = seq + 1 WHERE id = 1 RETURNING seq, hash",
            &[],
        )
        .await?;
    let (seq, prev_hash) =
        head.ok_or_else(|| StoreError::NotCommitted("the audit trail's head is missing".into()))?;
    let mut entry = Entry {
        seq,
        at: at.trunc_subsecs(6),
        actor_kind: actor.kind.as_str().to_owned(),
        actor_id: actor.id.clone(),
        actor_name: actor.name.clone(),
        operation: action.operation.clone(),
        org_id: action.org_id.clone(),
        target: action.target.clone(),
        before: action.before.as_ref().map(ToString::to_string),
        after: action.after.as_ref().map(ToString::to_string),
        address: actor.address.clone(),
        user_agent: actor.user_agent.clone(),
        request_id: actor.request_id.clone(),
        outcome: outcome.to_owned(),
        prev_hash,
        hash: String::new(),
    };
    entry.hash = entry.digest();
    let e = &entry;
    tx.execute(
        &format!(
            "INSERT INTO audit_log ({COLUMNS}) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        ),
        params![
            e.seq,
            e.at,
            e.actor_kind,
            e.actor_id,
            e.actor_name,
            e.operation,
            e.org_id,
            e.target,
            e.before,
            e.after,
            e.address,
            e.user_agent,
            e.request_id,
            e.outcome,
            e.prev_hash,
            e.hash
        ],
    )
    .await?;
    tx.execute(
        "UPDATE audit_head SET hash = $1 WHERE id = 1",
        params![e.hash],
    )
    .await?;
    Ok(())
}

string_enum! {
    /// What a walk of the chain found wrong at an entry.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Fault ("fault") {
        /// Its fields no longer give its hash.
        Edited = "edited",
        /// Entries are missing before it (numbers skipped, or a predecessor nowhere in the log).
        Removed = "removed",
        /// It follows another entry than the one before it.
        Reordered = "reordered",
    }
}

/// One entry the walk found wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub seq: i64,
    pub fault: Fault,
    pub message: String,
}

/// What a walk of the whole chain found.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Entries read.
    pub entries: u64,
    pub first_seq: i64,
    pub last_seq: i64,
    /// The head's hash: kept somewhere else, it shows later that nobody rewrote the whole
    /// chain from some entry on (which a hash chain alone cannot show).
    pub head_hash: String,
    /// Empty when the chain is whole; at most `PROBLEMS_AT_MOST`.
    pub problems: Vec<Problem>,
}

impl Verdict {
    pub fn intact(&self) -> bool {
        self.problems.is_empty()
    }
}

type Head = (i64, String, i64, String);

/// Walks the chain from its kept start to the head as it stands now.
pub async fn verify(db: &Db) -> Result<Verdict, StoreError> {
    let (head_seq, head_hash, first_seq, first_prev): Head = db
        .read_row(
            "SELECT seq, hash, first_seq, first_prev FROM audit_head WHERE id = 1",
            &[],
        )
        .await?
        .ok_or_else(|| StoreError::NotCommitted("the audit trail's head is missing".into()))?;
    let mut verdict = Verdict {
        entries: 0,
        first_seq,
        last_seq: first_seq - 1,
        head_hash: head_hash.clone(),
        problems: Vec::new(),
    };
    // Entries whose predecessor is not the entry before them: (seq, the hash they follow).
    let mut strays: Vec<(i64, String)> = Vec::new();
    let (mut expected_seq, mut expected_prev) = (first_seq, first_prev.clone());
    let mut after = first_seq - 1;
    loop {
        let rows: Vec<Entry> = db
            .read_rows(
                &format!(
                    "SELECT {COLUMNS} FROM audit_log WHERE seq > $1 AND seq <= $2 \
                     ORDER BY seq LIMIT $3"
                ),
                params![after, head_seq, STEP],
            )
            .await?;
        let Some(last) = rows.last() else { break };
        after = last.seq;
        for entry in rows {
            verdict.entries += 1;
            if entry.seq > expected_seq {
                verdict.problems.push(Problem {
                    seq: entry.seq,
                    fault: Fault::Removed,
                    message: removed(expected_seq, entry.seq - 1),
                });
            }
            if entry.digest() != entry.hash {
                verdict.problems.push(Problem {
                    seq: entry.seq,
                    fault: Fault::Edited,
                    message: format!(
                        "entry {} was edited: its fields no longer give its hash",
                        entry.seq
                    ),
                });
            } else if entry.prev_hash != expected_prev && entry.seq == expected_seq {
                strays.push((entry.seq, entry.prev_hash.clone()));
            }
            expected_seq = entry.seq + 1;
            expected_prev = entry.hash;
        }
        if verdict.problems.len() + strays.len() >= PROBLEMS_AT_MOST {
            break;
        }
    }
    verdict.last_seq = expected_seq - 1;
    if verdict.problems.len() + strays.len() < PROBLEMS_AT_MOST {
        if expected_seq <= head_seq {
            verdict.problems.push(Problem {
                seq: expected_seq,
                fault: Fault::Removed,
                message: removed(expected_seq, head_seq),
            });
        } else if expected_prev != head_hash {
            verdict.problems.push(Problem {
                seq: head_seq,
                fault: Fault::Edited,
                message: format!(
                    "entry {head_seq} is not the entry the chain's head records: it was \
                     replaced"
                ),
            });
        }
    }
    if !strays.is_empty() {
        let found = where_hashes_are(db, &strays, first_seq, head_seq).await?;
        for (seq, prev) in strays {
            let message = match found.get(&prev) {
                Some(&at) => format!(
                    "entry {seq} is out of order: it follows entry {at}, not entry {}",
                    seq - 1
                ),
                None if prev == first_prev => {
                    format!("entry {seq} is out of order: it was the first entry")
                }
                None => format!(
                    "entry {seq} follows an entry that is no longer in the log: entry {} was \
                     replaced, or an entry after it removed",
                    seq - 1
                ),
            };
            let fault = if found.contains_key(&prev) || prev == first_prev {
                Fault::Reordered
            } else {
                Fault::Removed
            };
            verdict.problems.push(Problem {
                seq,
                fault,
                message,
            });
        }
    }
    verdict.problems.sort_by_key(|p| p.seq);
    verdict.problems.truncate(PROBLEMS_AT_MOST);
    Ok(verdict)
}

/// Removes the entries dated before `before` (the retention period has passed them), moving
/// the chain's start past them, and appends an entry saying so, in one transaction: the walk
/// then starts at the first kept entry, which still names the hash of the last removed one.
/// How many entries were removed.
pub async fn prune(db: &Db, actor: &Actor, before: DateTime<Utc>) -> Result<u64, StoreError> {
    db.unaudited()
        .write(Prune {
            actor: actor.clone(),
            before,
            at: db.now(),
        })
        .await
}

struct Prune {
    actor: Actor,
    before: DateTime<Utc>,
    at: DateTime<Utc>,
}

impl crate::backend::Steps for Prune {
    type Output = u64;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<u64, StoreError> {
        // The head first: it orders this prune after every append before it.
        let head: Option<(i64, i64)> = tx
            .row_locked("SELECT seq, first_seq FROM audit_head WHERE id = 1", &[])
            .await?;
        let (_, first_seq) = head
            .ok_or_else(|| StoreError::NotCommitted("the audit trail's head is missing".into()))?;
        // The last entry to go: the newest of an unbroken run of old entries from the start
        // (an entry dated earlier than one before it ends the run: nothing newer goes).
        let last: Option<(i64, String)> = tx
            .row(
                "SELECT seq, hash FROM audit_log WHERE seq >= $1 AND seq < COALESCE(\
                 (SELECT MIN(seq) FROM audit_log WHERE at >= $2), 9223372036854775807) \
                 ORDER BY seq DESC LIMIT 1",
                params![first_seq, self.before],
            )
            .await?;
        let Some((through, hash)) = last else {
            return Ok(0);
        };
        let removed = tx
            .execute("DELETE FROM audit_log WHERE seq <= $1", params![through])
            .await?;
        tx.execute(
            "UPDATE audit_head SET first_seq = $1, first_prev = $2 WHERE id = 1",
            params![through + 1, hash],
        )
        .await?;
        let action = Action::new("audit-log.prune").after(serde_json::json!({
            "before": self.before,
            "removedThrough": through,
            "removedThroughHash": hash,
        }));
        append(tx, &self.actor, &action, "ok", self.at).await?;
        Ok(removed)
    }
}

fn removed(from: i64, to: i64) -> String {
    if from == to {
        format!("entry {from} was removed")
    } else {
        format!("entries {from} to {to} were removed")
    }
}

/// Where the entries with the hashes `strays` follow are: hash -> its entry's number.
async fn where_hashes_are(
    db: &Db,
    strays: &[(i64, String)],
    first_seq: i64,
    head_seq: i64,
) -> Result<std::collections::HashMap<String, i64>, StoreError> {
    let wanted: std::collections::HashSet<&str> =
        strays.iter().map(|(_, prev)| prev.as_str()).collect();
    let mut found = std::collections::HashMap::new();
    let mut after = first_seq - 1;
    loop {
        let rows: Vec<(i64, String)> = db
            .read_rows(
                "SELECT seq, hash FROM audit_log WHERE seq > $1 AND seq <= $2 \
                 ORDER BY seq LIMIT $3",
                params![after, head_seq, STEP],
            )
            .await?;
        let Some(last) = rows.last() else { break };
        after = last.0;
        for (seq, hash) in rows {
            if wanted.contains(hash.as_str()) {
                found.insert(hash, seq);
            }
        }
    }
    Ok(found)
}
