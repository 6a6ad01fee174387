//! Signing in and the sessions it opens: a password checked against its argon2id hash (after
//! the throttle, from an allowed address), a session token given once and kept as its SHA-256
//! hash, ended by its absolute expiry, by a while unused, by revocation, or at once when its
//! operator is disabled or removed. Every sign-in, failed or not, is in the audit trail.

use std::net::IpAddr;

use chrono::{DateTime, Duration, Utc};
use seam::StoreError;
use seam::audit::{Action, Actor, ActorKind, chain};
use seam::backend::{Steps, Tx};
use seam::common::ids::{hex, new_id, random_token, sha256};
use tenancy::passwords::{DECOY_HASH, blocking, verify_password};

use crate::accounts::{Operator, OperatorRow, normal_email};
use crate::second_factor::{self, Factor};
use crate::{AddressBlock, Operators, Role, throttle};
use seam::common::codes::CodeKey;

/// How long a session lasts at most, and unused.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub absolute: Duration,
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            absolute: Duration::hours(12),
            idle: Duration::minutes(30),
        }
    }
}

/// A last use is written at most this often (each request would otherwise be a write).
const SEEN_EVERY: Duration = Duration::minutes(1);

/// An attempt to sign in, and where it came from.
#[derive(Clone)]
pub struct SignIn {
    pub email: String,
    pub password: String,
    /// A TOTP code or a recovery code, for an operator with a second factor.
    pub second_factor: Option<String>,
    pub address: Option<IpAddr>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("email", &self.email)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// A session as listed (never its token).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub operator_id: String,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A new session and its token, which is shown only to whoever signed in.
pub struct Opened {
    pub session: Session,
    pub operator: Operator,
    pub token: String,
    /// Two-factor sign-in is required of everyone and this operator has none yet: the
    /// session may only enrol it (and change the password).
    pub must_enrol_two_factor: bool,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// A session a token opens, with its operator.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub operator: Operator,
    pub session: Session,
    /// Whether a second factor is required of every operator (the owners' setting).
    pub two_factor_required: bool,
}

row_struct! {
    /// A session and its operator, read together.
    struct SignedInRow {
        id: String,
        operator_id: String,
        created_at: DateTime<Utc>,
        last_seen_at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
        address: Option<String>,
        user_agent: Option<String>,
        revoked_at: Option<DateTime<Utc>>,
        email: String,
        role: String,
        must_change_password: bool,
        allowed_addresses: Option<String>,
        disabled_at: Option<DateTime<Utc>>,
        operator_created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        two_factor: bool,
        two_factor_required: bool,
    }
}

row_struct! {
    struct SessionRow {
        id: String,
        operator_id: String,
        created_at: DateTime<Utc>,
        last_seen_at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
        address: Option<String>,
        user_agent: Option<String>,
        revoked_at: Option<DateTime<Utc>>,
    }
}

const SESSION_COLUMNS: &str =
    "id, operator_id, created_at, last_seen_at, expires_at, address, user_agent, revoked_at";

impl From<SessionRow> for Session {
    fn from(r: SessionRow) -> Session {
        Session {
            id: r.id,
            operator_id: r.operator_id,
            created_at: r.created_at,
            last_seen_at: r.last_seen_at,
            expires_at: r.expires_at,
            address: r.address,
            user_agent: r.user_agent,
            revoked_at: r.revoked_at,
        }
    }
}

/// The refusal every wrong e-mail or password gets, whichever was wrong.
fn wrong() -> StoreError {
    StoreError::Refused {
        code: "wrong_credentials",
        field: None,
        message: "wrong e-mail or password".into(),
    }
}

fn locked(until: DateTime<Utc>, now: DateTime<Utc>) -> StoreError {
    StoreError::Throttled {
        code: "locked",
        message: format!(
            "too many failed sign-ins: signing in is locked until {}",
            until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        retry_after: (until - now).num_seconds().max(1) as u64,
    }
}

impl Operators {
    /// Signs in: a session for the operator whose e-mail and password `attempt` gives, from an
    /// address it may sign in from. Refused without checking the password while the account or
    /// the address is locked; each failure counts towards the lock and is in the audit trail.
    #[tracing::instrument(skip_all)]
    pub async fn sign_in(
        &self,
        attempt: SignIn,
        limits: SessionLimits,
        key: &CodeKey,
    ) -> Result<Opened, StoreError> {
        let email = normal_email(&attempt.email).map_err(|_| wrong())?;
        let now = self.now();
        let keys = throttle::keys(&email, attempt.address);
        if let Some(until) = self.read(LockedUntil(keys.clone(), now)).await? {
            return Err(locked(until, now));
        }
        let found: Option<(String, String)> = self
            .read_row(
                "SELECT id, password_hash FROM operators WHERE email = $1",
                params![email],
            )
            .await?;
        let hash = found
            .as_ref()
            .map_or_else(|| DECOY_HASH.clone(), |(_, hash)| hash.clone());
        let password = attempt.password.clone();
        let matches = blocking(move || Ok(verify_password(&password, &hash))).await?;
        let actor = Actor {
            kind: ActorKind::Anonymous,
            id: None,
            name: email.clone(),
            address: attempt.address.map(|a| a.to_string()),
            user_agent: attempt.user_agent.clone(),
            request_id: attempt.request_id.clone(),
        };
        let Some((id, _)) = found.filter(|_| matches) else {
            let failed = Failed {
                keys,
                actor,
                reason: "wrong e-mail or password",
                at: now,
            };
            return Err(match self.write(failed).await? {
                Some(until) => locked(until, now),
                None => wrong(),
            });
        };
        let operator = self.find(&id).await?;
        let refusal = if operator.disabled_at.is_some() {
            Some(("operator_disabled", "this operator is disabled"))
        } else if !allowed(&operator, attempt.address) {
            Some((
                "address_not_allowed",
                "this operator may not sign in from this address",
            ))
        } else {
            None
        };
        let actor = Actor {
            kind: ActorKind::Operator,
            id: Some(operator.id.clone()),
            name: operator.email.clone(),
            ..actor
        };
        if let Some((code, message)) = refusal {
            self.write(Note {
                actor,
                action: Action::new("session.sign-in"),
                outcome: format!("failed: {message}"),
                at: now,
            })
            .await?;
            return Err(StoreError::Refused {
                code,
                field: None,
                message: message.into(),
            });
        }
        let factor = match self
            .factor(&operator.id, attempt.second_factor.as_deref(), key)
            .await?
        {
            Some(None) => {
                return Err(StoreError::Refused {
                    code: "second_factor_required",
                    field: Some("secondFactor".into()),
                    message: "give the code from your authenticator app, or a recovery code".into(),
                });
            }
            Some(Some(factor)) => Some(factor),
            None => None,
        };
        let must_enrol_two_factor = factor.is_none() && self.two_factor_required().await?;
        let token = random_token("rwo_", 32);
        let session = Session {
            id: new_id(),
            operator_id: operator.id.clone(),
            created_at: now,
            last_seen_at: now,
            expires_at: now + limits.absolute,
            address: actor.address.clone(),
            user_agent: attempt.user_agent,
            revoked_at: None,
        };
        let opened = self
            .write(Open {
                session: session.clone(),
                token_hash: hex(&sha256(&token)),
                account_key: keys[0].0.clone(),
                factor,
                actor: actor.clone(),
            })
            .await;
        if let Err(StoreError::Refused {
            code: "wrong_second_factor",
            ..
        }) = &opened
        {
            let failed = Failed {
                keys,
                actor,
                reason: "wrong or already used second factor",
                at: now,
            };
            if let Some(until) = self.write(failed).await? {
                return Err(locked(until, now));
            }
        }
        opened?;
        Ok(Opened {
            session,
            operator,
            token,
            must_enrol_two_factor,
        })
    }

    /// The operator and session `token` opens now: the session neither revoked nor expired
    /// (absolutely or unused for `limits.idle`), its operator enabled; and whether a second
    /// factor is required of everyone. One read (two for a per-organisation role); its last use
    /// is noted at most once a minute.
    #[tracing::instrument(skip_all)]
    pub async fn authenticate(
        &self,
        token: &str,
        limits: SessionLimits,
    ) -> Result<Option<SignedIn>, StoreError> {
        let now = self.now();
        let row: Option<SignedInRow> = self
            .read_row(
                "SELECT s.id, s.operator_id, s.created_at, s.last_seen_at, s.expires_at, \
                 s.address, s.user_agent, s.revoked_at, o.email, o.role, \
                 o.must_change_password, o.allowed_addresses, o.disabled_at, o.created_at, \
                 o.updated_at, o.totp_confirmed_at IS NOT NULL, EXISTS (SELECT 1 FROM \
                 service_settings WHERE name = 'require_2fa' AND value = 'true') \
                 FROM operator_sessions s JOIN operators o ON o.id = s.operator_id \
                 WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 \
                 AND s.last_seen_at > $3 AND o.disabled_at IS NULL",
                params![hex(&sha256(token)), now, now - limits.idle],
            )
            .await?;
        let Some(r) = row else { return Ok(None) };
        let operator = OperatorRow {
            id: r.operator_id.clone(),
            email: r.email,
            role: r.role,
            must_change_password: r.must_change_password,
            allowed_addresses: r.allowed_addresses,
            disabled_at: r.disabled_at,
            created_at: r.operator_created_at,
            updated_at: r.updated_at,
            two_factor: r.two_factor,
        };
        let per_organisation = Role::parse(&operator.role).is_some_and(Role::per_organisation);
        let orgs = if per_organisation {
            let rows: Vec<(String,)> = self
                .read_rows(
                    "SELECT org_id FROM operator_orgs WHERE operator_id = $1 ORDER BY org_id",
                    params![operator.id],
                )
                .await?;
            rows.into_iter().map(|(org,)| org).collect()
        } else {
            Vec::new()
        };
        let operator = operator.into_operator(orgs)?;
        let mut session = Session {
            id: r.id,
            operator_id: r.operator_id,
            created_at: r.created_at,
            last_seen_at: r.last_seen_at,
            expires_at: r.expires_at,
            address: r.address,
            user_agent: r.user_agent,
            revoked_at: r.revoked_at,
        };
        if now - session.last_seen_at >= SEEN_EVERY {
            self.unaudited()
                .execute(
                    "UPDATE operator_sessions SET last_seen_at = $2 WHERE id = $1",
                    params![session.id, now],
                )
                .await?;
            session.last_seen_at = now;
        }
        Ok(Some(SignedIn {
            operator,
            session,
            two_factor_required: r.two_factor_required,
        }))
    }

    /// The operator's sessions that are still open, newest first.
    #[tracing::instrument(skip_all)]
    pub async fn sessions(
        &self,
        operator_id: &str,
        limits: SessionLimits,
    ) -> Result<Vec<Session>, StoreError> {
        let now = self.now();
        let rows: Vec<SessionRow> = self
            .read_rows(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM operator_sessions WHERE operator_id = $1 \
                     AND revoked_at IS NULL AND expires_at > $2 AND last_seen_at > $3 \
                     ORDER BY id DESC"
                ),
                params![operator_id, now, now - limits.idle],
            )
            .await?;
        Ok(rows.into_iter().map(Session::from).collect())
    }

    /// Ends one of the operator's sessions (signing out, or "sign out elsewhere").
    #[tracing::instrument(skip_all)]
    pub async fn revoke_session(
        &self,
        operator_id: &str,
        session_id: &str,
    ) -> Result<(), StoreError> {
        let changed = self
            .execute(
                "UPDATE operator_sessions SET revoked_at = $3 \
                 WHERE id = $1 AND operator_id = $2 AND revoked_at IS NULL",
                params![session_id, operator_id, self.now()],
            )
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound { what: "session" });
        }
        Ok(())
    }
}

/// Whether the operator may sign in from `address` (anywhere, when it has no blocks).
fn allowed(operator: &Operator, address: Option<IpAddr>) -> bool {
    if operator.allowed_addresses.is_empty() {
        return true;
    }
    address.is_some_and(|address| {
        operator
            .allowed_addresses
            .iter()
            .filter_map(|block| AddressBlock::parse(block).ok())
            .any(|block| block.contains(address))
    })
}

/// Whether the attempt's keys are locked.
struct LockedUntil(Vec<(String, i64)>, DateTime<Utc>);

impl Steps for LockedUntil {
    type Output = Option<DateTime<Utc>>;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        throttle::locked_until(tx, &self.0, self.1).await
    }
}

/// A failed attempt: counted against its keys, and in the audit trail.
struct Failed {
    keys: Vec<(String, i64)>,
    actor: Actor,
    reason: &'static str,
    at: DateTime<Utc>,
}

impl Steps for Failed {
    type Output = Option<DateTime<Utc>>;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        let locked = throttle::fail(tx, &self.keys, self.at).await?;
        let outcome = match locked {
            Some(until) => format!(
                "failed: {}; signing in locked until {}",
                self.reason,
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
            None => format!("failed: {}", self.reason),
        };
        let action = Action::new("session.sign-in");
        chain::append(tx, &self.actor, &action, &outcome, self.at).await?;
        Ok(locked)
    }
}

/// An entry of its own.
struct Note {
    actor: Actor,
    action: Action,
    outcome: String,
    at: DateTime<Utc>,
}

impl Steps for Note {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        chain::append(tx, &self.actor, &self.action, &self.outcome, self.at).await
    }
}

/// A session opened: its row, the account's failures forgotten, the sign-in in the trail.
struct Open {
    session: Session,
    token_hash: String,
    account_key: String,
    factor: Option<Factor>,
    actor: Actor,
}

impl Steps for Open {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let s = &self.session;
        if let Some(factor) = &self.factor {
            second_factor::take(tx, &s.operator_id, factor, s.created_at).await?;
        }
        tx.execute(
            &format!(
                "INSERT INTO operator_sessions ({SESSION_COLUMNS}, token_hash) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            ),
            params![
                s.id,
                s.operator_id,
                s.created_at,
                s.last_seen_at,
                s.expires_at,
                s.address,
                s.user_agent,
                s.revoked_at,
                self.token_hash
            ],
        )
        .await?;
        throttle::clear(tx, &self.account_key).await?;
        let action = Action::new("session.sign-in").target(s.id.clone());
        chain::append(tx, &self.actor, &action, "ok", s.created_at).await
    }
}
