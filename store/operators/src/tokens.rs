//! Automation tokens: an operator's credentials for scripts, each with a name, a list of scopes
//! (what it may do, within its operator's role) and an expiry. A token is given once and kept
//! as its SHA-256 hash; it stops working when it expires, when revoked, or at once when its
//! operator is disabled or removed. What a token does is recorded as its operator's.

use chrono::{DateTime, Duration, Utc};
use seam::StoreError;
use seam::common::ids::{hex, new_id, random_token, sha256};

use crate::{Operator, Operators};

/// The longest a token may live.
pub const LONGEST: Duration = Duration::days(366);

/// A last use is written at most this often.
const USED_EVERY: Duration = Duration::minutes(1);

/// A token as listed (never its secret).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    pub id: String,
    pub operator_id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A token to make.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub name: String,
    /// Checked by the caller against the scopes it knows; at least one.
    pub scopes: Vec<String>,
    pub expires_at: DateTime<Utc>,
}

row_struct! {
    struct TokenRow {
        id: String,
        operator_id: String,
        name: String,
        scopes: String,
        created_at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
        last_used_at: Option<DateTime<Utc>>,
        revoked_at: Option<DateTime<Utc>>,
    }
}

const TOKEN_COLUMNS: &str =
    "id, operator_id, name, scopes, created_at, expires_at, last_used_at, revoked_at";

impl From<TokenRow> for Token {
    fn from(r: TokenRow) -> Token {
        Token {
            id: r.id,
            operator_id: r.operator_id,
            name: r.name,
            scopes: r.scopes.split(',').map(str::to_owned).collect(),
            created_at: r.created_at,
            expires_at: r.expires_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

impl Operators {
    /// Makes a token for the operator: the token (its secret, shown only now) and its record.
    #[tracing::instrument(skip_all)]
    pub async fn create_token(
        &self,
        operator_id: &str,
        new: NewToken,
    ) -> Result<(Token, String), StoreError> {
        let now = self.now();
        let name = new.name.trim();
        if name.is_empty() || new.name.chars().count() > 100 || name.contains('\0') {
            return Err(StoreError::invalid(
                "name",
                "must be 1 to 100 characters, not blank, without NUL",
            ));
        }
        if new.scopes.is_empty() {
            return Err(StoreError::invalid("scopes", "give at least one scope"));
        }
        if new.expires_at <= now {
            return Err(StoreError::invalid("expiresAt", "must be later than now"));
        }
        if new.expires_at > now + LONGEST {
            return Err(StoreError::invalid(
                "expiresAt",
                "must be within 366 days from now",
            ));
        }
        let mut scopes = new.scopes;
        scopes.sort();
        scopes.dedup();
        let secret = random_token("rwt_", 32);
        let token = Token {
            id: new_id(),
            operator_id: operator_id.to_owned(),
            name: name.to_owned(),
            scopes,
            created_at: now,
            expires_at: new.expires_at,
            last_used_at: None,
            revoked_at: None,
        };
        self.execute(
            &format!(
                "INSERT INTO operator_tokens ({TOKEN_COLUMNS}, token_hash) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            ),
            params![
                token.id,
                token.operator_id,
                token.name,
                token.scopes.join(","),
                token.created_at,
                token.expires_at,
                token.last_used_at,
                token.revoked_at,
                hex(&sha256(&secret))
            ],
        )
        .await?;
        Ok((token, secret))
    }

    /// The operator's tokens, newest first (revoked and expired ones included, to see).
    #[tracing::instrument(skip_all)]
    pub async fn tokens(&self, operator_id: &str) -> Result<Vec<Token>, StoreError> {
        let rows: Vec<TokenRow> = self
            .read_rows(
                &format!(
                    "SELECT {TOKEN_COLUMNS} FROM operator_tokens WHERE operator_id = $1 \
                     ORDER BY id DESC"
                ),
                params![operator_id],
            )
            .await?;
        Ok(rows.into_iter().map(Token::from).collect())
    }

    /// Revokes one of the operator's tokens; a revoked one is answered as it is.
    #[tracing::instrument(skip_all)]
    pub async fn revoke_token(&self, operator_id: &str, id: &str) -> Result<Token, StoreError> {
        let select = format!(
            "SELECT {TOKEN_COLUMNS} FROM operator_tokens WHERE id = $1 AND operator_id = $2"
        );
        let found: Option<TokenRow> = self.read_row(&select, params![id, operator_id]).await?;
        let found = Token::from(found.ok_or(StoreError::NotFound { what: "token" })?);
        if found.revoked_at.is_some() {
            return Ok(found);
        }
        self.execute(
            "UPDATE operator_tokens SET revoked_at = $3 WHERE id = $1 AND operator_id = $2",
            params![id, operator_id, self.now()],
        )
        .await?;
        let row: Option<TokenRow> = self.read_row(&select, params![id, operator_id]).await?;
        Ok(Token::from(
            row.ok_or(StoreError::NotFound { what: "token" })?,
        ))
    }

    /// The operator and token `secret` opens now: neither revoked nor expired, its operator
    /// enabled. Its last use is noted.
    #[tracing::instrument(skip_all)]
    pub async fn authenticate_token(
        &self,
        secret: &str,
    ) -> Result<Option<(Operator, Token)>, StoreError> {
        let now = self.now();
        let row: Option<TokenRow> = self
            .read_row(
                &format!(
                    "SELECT {TOKEN_COLUMNS} FROM operator_tokens \
                     WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2"
                ),
                params![hex(&sha256(secret)), now],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let operator = match self.find(&row.operator_id).await {
            Ok(operator) if operator.disabled_at.is_none() => operator,
            Ok(_) | Err(StoreError::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(err),
        };
        let mut token = Token::from(row);
        if token.last_used_at.is_none_or(|at| now - at >= USED_EVERY) {
            self.unaudited()
                .execute(
                    "UPDATE operator_tokens SET last_used_at = $2 WHERE id = $1",
                    params![token.id, now],
                )
                .await?;
            token.last_used_at = Some(now);
        }
        Ok(Some((operator, token)))
    }
}
