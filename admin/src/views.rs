//! What the admin API answers about operators, sessions and tokens: the store's records as
//! the document describes them (their secrets are never in them).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An operator account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorView {
    pub id: String,
    /// In lower case; unique.
    pub email: String,
    #[schema(schema_with = crate::schemas::role)]
    pub role: String,
    /// The organisations a per-organisation role acts on (ids); empty for owner and admin.
    pub orgs: Vec<String>,
    /// A one-time password is set: it must be changed before anything else.
    pub must_change_password: bool,
    /// CIDR blocks the operator may sign in from; empty: anywhere.
    pub allowed_addresses: Vec<String>,
    /// Whether it signs in with a second factor.
    pub two_factor: bool,
    pub disabled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<store::Operator> for OperatorView {
    fn from(o: store::Operator) -> OperatorView {
        OperatorView {
            id: o.id,
            email: o.email,
            role: o.role.as_str().to_owned(),
            orgs: o.orgs,
            must_change_password: o.must_change_password,
            allowed_addresses: o.allowed_addresses,
            two_factor: o.two_factor,
            disabled_at: o.disabled_at,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// A signed-in session (never its token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: String,
    pub operator_id: String,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    /// When it ends at the latest; it also ends after 30 minutes unused.
    pub expires_at: DateTime<Utc>,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    /// Whether it is the session this request was sent with.
    pub current: bool,
}

impl SessionView {
    pub fn of(s: store::Session, current: Option<&str>) -> SessionView {
        SessionView {
            current: current == Some(s.id.as_str()),
            id: s.id,
            operator_id: s.operator_id,
            created_at: s.created_at,
            last_seen_at: s.last_seen_at,
            expires_at: s.expires_at,
            address: s.address,
            user_agent: s.user_agent,
        }
    }
}

/// An automation token (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub id: String,
    pub operator_id: String,
    pub name: String,
    /// What it may do, within its operator's role: `read`, `configure`, `support`, `service`,
    /// `operators`.
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<store::Token> for TokenView {
    fn from(t: store::Token) -> TokenView {
        TokenView {
            id: t.id,
            operator_id: t.operator_id,
            name: t.name,
            scopes: t.scopes,
            created_at: t.created_at,
            expires_at: t.expires_at,
            last_used_at: t.last_used_at,
            revoked_at: t.revoked_at,
        }
    }
}
