//! Operator accounts: added with a one-time password (shown once, to be changed at the first
//! sign-in), listed, disabled and enabled, removed, their passwords reset. The service always
//! keeps one enabled owner: the last cannot be disabled, removed or made something else.

use chrono::{DateTime, Utc};
use seam::StoreError;
use seam::backend::{Steps, Tx};
use seam::common::ids::{new_id, random_token};
use seam::error::conflict_on;
use tenancy::passwords::{blocking, hash_password, verify_password};

use crate::{AddressBlock, Operators, Role};

/// An operator as kept, without secrets.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Operator {
    pub id: String,
    pub email: String,
    pub role: Role,
    /// The organisations a per-organisation role acts on (ids); empty for owner and admin.
    pub orgs: Vec<String>,
    /// Set for a new or reset password: the next sign-in must choose another.
    pub must_change_password: bool,
    /// Where the operator may sign in from (CIDR blocks); empty: anywhere.
    pub allowed_addresses: Vec<String>,
    /// Whether it signs in with a second factor (TOTP confirmed).
    pub two_factor: bool,
    pub disabled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An operator to add.
#[derive(Debug, Clone)]
pub struct NewOperator {
    pub email: String,
    pub role: Role,
    /// Organisation ids, for a per-organisation role (at least one); none for owner and admin.
    pub orgs: Vec<String>,
    pub allowed_addresses: Vec<String>,
}

/// A password made by the service, shown once to whoever asked for it and kept only as its
/// hash. Its `Debug` does not show it, so that it never reaches a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// 24 random characters of [0-9a-f] (96 bits).
    fn new() -> Password {
        Password(random_token("", 12))
    }

    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password([redacted])")
    }
}

row_struct! {
    pub(crate) struct OperatorRow {
        id: String,
        email: String,
        role: String,
        must_change_password: bool,
        allowed_addresses: Option<String>,
        disabled_at: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        two_factor: bool,
    }
}

/// The columns a new operator's row is written with.
const OPERATOR_COLUMNS: &str = "id, email, role, must_change_password, allowed_addresses, \
     disabled_at, created_at, updated_at";

/// An operator's row as read (`OperatorRow`).
const OPERATOR_SELECT: &str = "id, email, role, must_change_password, allowed_addresses, \
     disabled_at, created_at, updated_at, totp_confirmed_at IS NOT NULL";

impl OperatorRow {
    pub(crate) fn into_operator(self, orgs: Vec<String>) -> Result<Operator, StoreError> {
        let role = Role::parse(&self.role).ok_or_else(|| StoreError::UnknownStored {
            table: "operators",
            column: "role",
            value: self.role.clone(),
        })?;
        let allowed_addresses = match &self.allowed_addresses {
            Some(text) => serde_json::from_str(text).map_err(|_| StoreError::UnknownStored {
                table: "operators",
                column: "allowed_addresses",
                value: text.clone(),
            })?,
            None => Vec::new(),
        };
        Ok(Operator {
            id: self.id,
            email: self.email,
            role,
            orgs,
            must_change_password: self.must_change_password,
            allowed_addresses,
            two_factor: self.two_factor,
            disabled_at: self.disabled_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// `email` as kept: trimmed and lowercased, or why it is not an e-mail address.
pub fn normal_email(email: &str) -> Result<String, StoreError> {
    // Counted as given (in characters, as the API's schema counts them): lowercasing may
    // lengthen a few letters.
    let length = email.trim().chars().count();
    let email = email.trim().to_lowercase();
    let well_formed = (3..=254).contains(&length)
        && email.split('@').count() == 2
        && email.split('@').all(|part| !part.is_empty())
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if well_formed {
        Ok(email)
    } else {
        Err(StoreError::invalid(
            "email",
            "must be an e-mail address (name@domain), at most 254 characters",
        ))
    }
}

/// `blocks` checked and written one way each.
pub fn normal_addresses(blocks: &[String]) -> Result<Vec<String>, StoreError> {
    blocks
        .iter()
        .map(|block| AddressBlock::parse(block).map(|b| b.to_string()))
        .collect()
}

/// Whether `role` may hold `orgs`: a per-organisation role needs at least one, the others none.
fn check_grants(role: Role, orgs: &[String]) -> Result<(), StoreError> {
    match (role.per_organisation(), orgs.is_empty()) {
        (true, true) => Err(StoreError::invalid(
            "orgs",
            format!(
                "the role {} acts on organisations: name at least one",
                role.as_str()
            ),
        )),
        (false, false) => Err(StoreError::invalid(
            "orgs",
            format!(
                "the role {} acts on every organisation: name none",
                role.as_str()
            ),
        )),
        _ => Ok(()),
    }
}

impl Operators {
    /// Adds an operator with a one-time password, which is returned (and kept only hashed).
    #[tracing::instrument(skip_all)]
    pub async fn add(&self, new: NewOperator) -> Result<(Operator, Password), StoreError> {
        let email = normal_email(&new.email)?;
        check_grants(new.role, &new.orgs)?;
        let mut orgs = new.orgs.clone();
        orgs.sort();
        orgs.dedup();
        let allowed_addresses = normal_addresses(&new.allowed_addresses)?;
        let password = Password::new();
        let hash = {
            let clear = password.0.clone();
            blocking(move || hash_password(&clear)).await?
        };
        let now = self.now();
        let operator = Operator {
            id: new_id(),
            email,
            role: new.role,
            orgs,
            must_change_password: true,
            allowed_addresses,
            two_factor: false,
            disabled_at: None,
            created_at: now,
            updated_at: now,
        };
        let added = self
            .write(Add {
                operator: operator.clone(),
                hash,
            })
            .await;
        added.map_err(|e| conflict_on(e, &[("email", "email")]))?;
        Ok((operator, password))
    }

    /// Every operator, in the order they were added.
    #[tracing::instrument(skip_all)]
    pub async fn list(&self) -> Result<Vec<Operator>, StoreError> {
        let rows: Vec<OperatorRow> = self
            .read_rows(
                &format!("SELECT {OPERATOR_SELECT} FROM operators ORDER BY id"),
                &[],
            )
            .await?;
        let grants: Vec<(String, String)> = self
            .read_rows(
                "SELECT operator_id, org_id FROM operator_orgs ORDER BY operator_id, org_id",
                &[],
            )
            .await?;
        rows.into_iter()
            .map(|row| {
                let orgs = grants
                    .iter()
                    .filter(|(operator, _)| *operator == row.id)
                    .map(|(_, org)| org.clone())
                    .collect();
                row.into_operator(orgs)
            })
            .collect()
    }

    /// The operator `reference` names: an id or an e-mail address (in any case).
    #[tracing::instrument(skip_all)]
    pub async fn find(&self, reference: &str) -> Result<Operator, StoreError> {
        let email = reference.trim().to_lowercase();
        let row: Option<OperatorRow> = self
            .read_row(
                &format!("SELECT {OPERATOR_SELECT} FROM operators WHERE id = $1 OR email = $2"),
                params![reference.trim(), email],
            )
            .await?;
        let row = row.ok_or(StoreError::NotFound { what: "operator" })?;
        let orgs: Vec<(String,)> = self
            .read_rows(
                "SELECT org_id FROM operator_orgs WHERE operator_id = $1 ORDER BY org_id",
                params![row.id],
            )
            .await?;
        row.into_operator(orgs.into_iter().map(|(org,)| org).collect())
    }

    /// Disables the operator: it cannot sign in, and its sessions and tokens stop working.
    #[tracing::instrument(skip_all)]
    pub async fn disable(&self, reference: &str) -> Result<Operator, StoreError> {
        let operator = self.find(reference).await?;
        let at = self.now();
        self.write(Change {
            id: operator.id.clone(),
            kind: ChangeKind::Disable,
            at,
        })
        .await?;
        self.find(&operator.id).await
    }

    /// Enables a disabled operator again.
    #[tracing::instrument(skip_all)]
    pub async fn enable(&self, reference: &str) -> Result<Operator, StoreError> {
        let operator = self.find(reference).await?;
        let at = self.now();
        self.write(Change {
            id: operator.id.clone(),
            kind: ChangeKind::Enable,
            at,
        })
        .await?;
        self.find(&operator.id).await
    }

    /// Removes the operator; what it did stays in the audit trail under its id and e-mail.
    #[tracing::instrument(skip_all)]
    pub async fn remove(&self, reference: &str) -> Result<Operator, StoreError> {
        let operator = self.find(reference).await?;
        let at = self.now();
        self.write(Change {
            id: operator.id.clone(),
            kind: ChangeKind::Remove,
            at,
        })
        .await?;
        Ok(operator)
    }

    /// Gives the operator another role, acting on `orgs` (organisation ids: at least one for a
    /// per-organisation role, none for `owner` and `admin`). It holds from the operator's next
    /// request; the last enabled owner keeps its role.
    #[tracing::instrument(skip_all)]
    pub async fn set_role(
        &self,
        reference: &str,
        role: Role,
        orgs: Vec<String>,
    ) -> Result<Operator, StoreError> {
        check_grants(role, &orgs)?;
        let mut orgs = orgs;
        orgs.sort();
        orgs.dedup();
        let operator = self.find(reference).await?;
        let at = self.now();
        self.write(Change {
            id: operator.id.clone(),
            kind: ChangeKind::Role(role, orgs),
            at,
        })
        .await?;
        self.find(&operator.id).await
    }

    /// Gives the operator a new one-time password (returned, kept only hashed), to be changed
    /// at its next sign-in.
    #[tracing::instrument(skip_all)]
    pub async fn reset_password(
        &self,
        reference: &str,
    ) -> Result<(Operator, Password), StoreError> {
        let operator = self.find(reference).await?;
        let password = Password::new();
        let hash = {
            let clear = password.0.clone();
            blocking(move || hash_password(&clear)).await?
        };
        let at = self.now();
        self.write(Change {
            id: operator.id.clone(),
            kind: ChangeKind::Password(hash),
            at,
        })
        .await?;
        Ok((self.find(&operator.id).await?, password))
    }
}

impl Operators {
    /// The operator's own change of password: `current` must be its password now, `new` a
    /// different one of at least `MIN_PASSWORD` characters. The one-time password's demand to
    /// change it is met, and every session but `keep` (the one asking) ends.
    #[tracing::instrument(skip_all)]
    pub async fn change_password(
        &self,
        operator_id: &str,
        current: &str,
        new: &str,
        keep: Option<&str>,
    ) -> Result<Operator, StoreError> {
        let row: Option<(String,)> = self
            .read_row(
                "SELECT password_hash FROM operators WHERE id = $1",
                params![operator_id],
            )
            .await?;
        let (hash,) = row.ok_or(StoreError::NotFound { what: "operator" })?;
        let (current, new) = (current.to_owned(), new.to_owned());
        let checked = blocking(move || {
            if !verify_password(&current, &hash) {
                return Err(StoreError::Refused {
                    code: "wrong_credentials",
                    field: Some("currentPassword".into()),
                    message: "the current password is wrong".into(),
                });
            }
            if new == current {
                return Err(StoreError::invalid(
                    "newPassword",
                    "must differ from the current password",
                ));
            }
            hash_password(&new).map_err(|e| match e {
                StoreError::Invalid { message, .. } => StoreError::invalid("newPassword", message),
                other => other,
            })
        })
        .await?;
        self.write(NewPassword {
            id: operator_id.to_owned(),
            hash: checked,
            keep: keep.map(str::to_owned),
            at: self.now(),
        })
        .await?;
        self.find(operator_id).await
    }
}

/// A password the operator chose, and its other sessions ended.
struct NewPassword {
    id: String,
    hash: String,
    keep: Option<String>,
    at: DateTime<Utc>,
}

impl Steps for NewPassword {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        tx.execute(
            "UPDATE operators SET password_hash = $2, must_change_password = FALSE, \
             updated_at = $3 WHERE id = $1",
            params![self.id, self.hash, self.at],
        )
        .await?;
        tx.execute(
            "UPDATE operator_sessions SET revoked_at = $2 WHERE operator_id = $1 \
             AND revoked_at IS NULL AND id <> $3",
            params![self.id, self.at, self.keep.as_deref().unwrap_or("")],
        )
        .await?;
        Ok(())
    }
}

/// The rows of a new operator.
struct Add {
    operator: Operator,
    hash: String,
}

impl Steps for Add {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let o = &self.operator;
        orgs_exist(tx, &o.orgs).await?;
        let addresses = (!o.allowed_addresses.is_empty())
            .then(|| serde_json::Value::from(o.allowed_addresses.clone()).to_string());
        tx.execute(
            &format!(
                "INSERT INTO operators ({OPERATOR_COLUMNS}, password_hash) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            ),
            params![
                o.id,
                o.email,
                o.role.as_str(),
                o.must_change_password,
                addresses,
                o.disabled_at,
                o.created_at,
                o.updated_at,
                self.hash
            ],
        )
        .await?;
        grant(tx, &o.id, &o.orgs).await
    }
}

/// Refuses organisations that do not exist.
async fn orgs_exist<T: Tx>(tx: &mut T, orgs: &[String]) -> Result<(), StoreError> {
    for org in orgs {
        let found: Option<(String,)> = tx
            .row("SELECT id FROM organisations WHERE id = $1", params![org])
            .await?;
        if found.is_none() {
            return Err(StoreError::UnknownReference {
                field: "orgs",
                message: format!("no organisation has the id {org}"),
            });
        }
    }
    Ok(())
}

/// Gives operator `id` the organisations `orgs`.
async fn grant<T: Tx>(tx: &mut T, id: &str, orgs: &[String]) -> Result<(), StoreError> {
    for org in orgs {
        tx.execute(
            "INSERT INTO operator_orgs (operator_id, org_id) VALUES ($1, $2)",
            params![id, org],
        )
        .await?;
    }
    Ok(())
}

enum ChangeKind {
    Disable,
    Enable,
    Remove,
    Password(String),
    /// A new role, and the organisations it acts on.
    Role(Role, Vec<String>),
}

/// A change to one operator, refused where it would leave no enabled owner.
struct Change {
    id: String,
    kind: ChangeKind,
    at: DateTime<Utc>,
}

impl Steps for Change {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let leaves_owners = match &self.kind {
            ChangeKind::Disable | ChangeKind::Remove => true,
            ChangeKind::Role(role, _) => *role != Role::Owner,
            ChangeKind::Enable | ChangeKind::Password(_) => false,
        };
        if leaves_owners {
            keep_an_owner(tx, &self.id).await?;
        }
        let changed = match &self.kind {
            ChangeKind::Disable => {
                let sql = "UPDATE operators SET disabled_at = COALESCE(disabled_at, $2), \
                           updated_at = $2 WHERE id = $1";
                tx.execute(sql, params![self.id, self.at]).await?
            }
            ChangeKind::Enable => {
                let sql = "UPDATE operators SET disabled_at = NULL, updated_at = $2 WHERE id = $1";
                tx.execute(sql, params![self.id, self.at]).await?
            }
            ChangeKind::Remove => {
                let grants = "DELETE FROM operator_orgs WHERE operator_id = $1";
                tx.execute(grants, params![self.id]).await?;
                tx.execute("DELETE FROM operators WHERE id = $1", params![self.id])
                    .await?
            }
            ChangeKind::Role(role, orgs) => {
                orgs_exist(tx, orgs).await?;
                let sql = "UPDATE operators SET role = $3, updated_at = $2 WHERE id = $1";
                let changed = tx
                    .execute(sql, params![self.id, self.at, role.as_str()])
                    .await?;
                let revoke = "DELETE FROM operator_orgs WHERE operator_id = $1";
                tx.execute(revoke, params![self.id]).await?;
                grant(tx, &self.id, orgs).await?;
                changed
            }
            ChangeKind::Password(hash) => {
                let sql = "UPDATE operators SET password_hash = $3, must_change_password = TRUE, \
                           updated_at = $2 WHERE id = $1";
                tx.execute(sql, params![self.id, self.at, hash]).await?
            }
        };
        if changed == 0 {
            return Err(StoreError::NotFound { what: "operator" });
        }
        Ok(())
    }
}

/// Refuses a change that takes operator `id` from the enabled owners if it is the last. The
/// owners are locked, so that two such changes at once cannot both pass.
async fn keep_an_owner<T: Tx>(tx: &mut T, id: &str) -> Result<(), StoreError> {
    let owners: Vec<(String,)> = tx
        .rows_locked(
            "SELECT id FROM operators WHERE role = 'owner' AND disabled_at IS NULL ORDER BY id",
            &[],
        )
        .await?;
    if owners.len() == 1 && owners[0].0 == id {
        return Err(StoreError::Refused {
            code: "last_owner",
            field: None,
            message: "this is the last enabled owner: add another owner first".into(),
        });
    }
    Ok(())
}
