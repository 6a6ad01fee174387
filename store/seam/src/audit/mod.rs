//! The audit trail: who changed what, when, from where, and how it ended. Every write an
//! operator's action makes (through the CLI, the admin API or the console) appends an entry in
//! the same transaction as the change, so a change that committed always has its entry and a
//! rolled-back one has none. Entries are chained by hash (`chain.rs`); `log.rs` lists them.
//!
//! An action runs on a database that carries its `Trail` (`Db::acting`): each `Db::write` on
//! it appends the trail's entry before it commits; an action that failed gets one entry of its
//! own saying so (`Trail::close`), and one that changed nothing (a read) none. Bulk loads (`Db::fork`) are not
//! audited row by row: the action that starts one is its entry.

pub mod chain;
pub mod log;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use std::future::Future;
use std::pin::Pin;

use crate::backend::{PgTx, SqliteTx, Steps, Tx, WriteHook, ready};
use crate::{Db, StoreError};

string_enum! {
    /// Who acted: the operator's command line on the server (`local`, named by the OS user), a
    /// signed-in operator, an operator's automation token, or nobody yet (a failed sign-in).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ActorKind ("actor kind") {
        Local = "local",
        Operator = "operator",
        Token = "token",
        Anonymous = "anonymous",
    }
}

/// Who acts, and from where.
#[derive(Debug, Clone)]
pub struct Actor {
    pub kind: ActorKind,
    /// The operator's id (for a token, the operator it acts for); none for `local`.
    pub id: Option<String>,
    /// The operator's e-mail, the OS user for `local`, the address tried for a failed sign-in.
    pub name: String,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
}

impl Actor {
    /// The command line on the server, run by the OS user `user`.
    pub fn local(user: impl Into<String>) -> Actor {
        Actor {
            kind: ActorKind::Local,
            id: None,
            name: user.into(),
            address: None,
            user_agent: None,
            request_id: None,
        }
    }
}

/// What an action does: its operation (`org.create`), the organisation and record it acts on,
/// and the record's fields before and after (secrets are redacted on the way in).
#[derive(Debug, Clone, Default)]
pub struct Action {
    pub operation: String,
    pub org_id: Option<String>,
    pub target: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl Action {
    pub fn new(operation: impl Into<String>) -> Action {
        Action {
            operation: operation.into(),
            ..Action::default()
        }
    }

    pub fn org(mut self, org_id: impl Into<String>) -> Action {
        self.org_id = Some(org_id.into());
        self
    }

    pub fn target(mut self, target: impl Into<String>) -> Action {
        self.target = Some(target.into());
        self
    }

    pub fn before(mut self, before: Value) -> Action {
        self.before = Some(redact(before));
        self
    }

    pub fn after(mut self, after: Value) -> Action {
        self.after = Some(redact(after));
        self
    }
}

/// Fields whose values never reach the trail, whatever object they are in.
const SECRET_FIELDS: [&str; 8] = [
    "password",
    "secret",
    "apisecret",
    "token",
    "totp",
    "recoverycodes",
    "code",
    "privatekey",
];

/// `value` with the value of every field whose name is a secret's (in any case, `_` and `-`
/// ignored) replaced by `"[redacted]"`, at any depth.
pub fn redact(value: Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(name, value)| {
                    let plain: String = name
                        .chars()
                        .filter(|c| !matches!(c, '_' | '-'))
                        .flat_map(char::to_lowercase)
                        .collect();
                    if SECRET_FIELDS.contains(&plain.as_str()) && !value.is_null() {
                        (name, Value::from("[redacted]"))
                    } else {
                        (name, redact(value))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(redact).collect()),
        other => other,
    }
}

/// One action under way: who acts, and what the action is.
#[derive(Debug)]
pub struct Trail {
    pub actor: Actor,
    pub action: Action,
}

impl Trail {
    pub fn new(actor: Actor, action: Action) -> Arc<Trail> {
        Arc::new(Trail { actor, action })
    }

    /// Ends the action on `db` (the database without the trail): a failed action gets an entry
    /// of its own with its error; a successful one has the entries of its writes (none if it
    /// changed nothing).
    pub async fn close<T, E: std::fmt::Display>(
        &self,
        db: &Db,
        result: &Result<T, E>,
    ) -> Result<(), StoreError> {
        match result {
            Ok(_) => Ok(()),
            Err(_) => self.record(db, result).await,
        }
    }

    /// Records the action's outcome as one entry of its own, written on `db`: for an action
    /// whose writes are not audited one by one (a bulk load).
    pub async fn record<T, E: std::fmt::Display>(
        &self,
        db: &Db,
        result: &Result<T, E>,
    ) -> Result<(), StoreError> {
        let outcome = match result {
            Ok(_) => "ok".to_owned(),
            Err(err) => format!("failed: {err:#}"),
        };
        db.unaudited()
            .write(Record {
                actor: self.actor.clone(),
                action: self.action.clone(),
                outcome,
                at: db.now(),
            })
            .await
    }
}

/// One entry, appended by a write of its own (a sign-in, a failed action).
#[derive(Debug, Clone)]
pub struct Record {
    pub actor: Actor,
    pub action: Action,
    pub outcome: String,
    pub at: DateTime<Utc>,
}

impl Steps for Record {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        chain::append(tx, &self.actor, &self.action, &self.outcome, self.at).await
    }
}

/// Each write of a database acting for the trail (`Db::acting`) appends its entry.
impl WriteHook for Trail {
    fn sqlite(&self, tx: &mut SqliteTx<'_>, at: DateTime<Utc>) -> Result<(), StoreError> {
        ready(chain::append(tx, &self.actor, &self.action, "ok", at))
    }

    fn postgres<'a>(
        &'a self,
        tx: &'a mut PgTx<'_>,
        at: DateTime<Utc>,
    ) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>> {
        Box::pin(chain::append(tx, &self.actor, &self.action, "ok", at))
    }
}
