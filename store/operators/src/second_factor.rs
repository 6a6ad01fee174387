//! The second factor: TOTP enrolled by the operator (a secret sealed with the service's data
//! key, usable once a first code confirms it), recovery codes issued at that moment only (kept
//! as hashes, each used once), an owner's setting that requires it of everyone, and its reset
//! by another operator.

use chrono::{DateTime, Utc};
use seam::StoreError;
use seam::backend::{Steps, Tx};
use seam::common::codes::CodeKey;
use seam::common::ids::{hex, random_token, sha256};

use crate::totp;
use crate::{Operator, Operators};

/// How many recovery codes an operator gets.
pub const RECOVERY_CODES: usize = 10;

/// A TOTP secret being enrolled, for the operator's authenticator app; shown once.
pub struct Enrolment {
    /// The secret in base 32, for typing into an app.
    pub secret: String,
    /// The `otpauth://` URI, for a QR code.
    pub uri: String,
}

impl std::fmt::Debug for Enrolment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Enrolment([redacted])")
    }
}

/// Recovery codes, shown once when TOTP is confirmed.
pub struct RecoveryCodes(pub Vec<String>);

impl std::fmt::Debug for RecoveryCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecoveryCodes({} [redacted])", self.0.len())
    }
}

/// What an operator gives as its second factor at sign-in, as checked: the step of a TOTP code,
/// or the hash of a recovery code. Taken in the session's transaction, once.
#[derive(Debug, Clone)]
pub(crate) enum Factor {
    Totp(i64),
    Recovery(String),
}

/// The associated data a secret is sealed with: a secret copied to another operator does not
/// open.
fn sealed_for(operator_id: &str) -> String {
    format!("operator:{operator_id}")
}

/// A recovery code as typed, made comparable: lower case, without spaces or dashes.
fn recovery_hash(code: &str) -> String {
    let plain: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    hex(&sha256(&plain))
}

fn refused(code: &'static str, field: Option<&str>, message: &str) -> StoreError {
    StoreError::Refused {
        code,
        field: field.map(str::to_owned),
        message: message.into(),
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}

type FactorRow = (Option<Vec<u8>>, Option<DateTime<Utc>>, Option<i64>);

impl Operators {
    /// The operator's TOTP secret and whether it is confirmed; `None` if it has none.
    async fn totp_of(
        &self,
        operator_id: &str,
        key: &CodeKey,
    ) -> Result<Option<(Vec<u8>, bool)>, StoreError> {
        let row: Option<FactorRow> = self
            .read_row(
                "SELECT totp_secret, totp_confirmed_at, totp_last_step FROM operators \
                 WHERE id = $1",
                params![operator_id],
            )
            .await?;
        let (sealed, confirmed, _) = row.ok_or(StoreError::NotFound { what: "operator" })?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let secret = key
            .open(&sealed_for(operator_id), &sealed)
            .and_then(|text| decode_hex(&text))
            .ok_or_else(|| StoreError::UnknownStored {
                table: "operators",
                column: "totp_secret",
                value: "a secret this data key does not open".into(),
            })?;
        Ok(Some((secret, confirmed.is_some())))
    }

    /// Begins TOTP enrolment: a new secret for the operator's app (replacing one not yet
    /// confirmed). Refused while a confirmed one is on: it is reset first.
    #[tracing::instrument(skip_all)]
    pub async fn begin_totp(
        &self,
        operator: &Operator,
        key: &CodeKey,
        issuer: &str,
    ) -> Result<Enrolment, StoreError> {
        if let Some((_, true)) = self.totp_of(&operator.id, key).await? {
            return Err(refused(
                "two_factor_on",
                None,
                "two-factor sign-in is already on: reset it first",
            ));
        }
        let mut secret = [0u8; totp::SECRET_BYTES];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret)
            .map_err(|_| StoreError::NotCommitted("no random source".into()))?;
        let sealed = key.seal(&sealed_for(&operator.id), &hex(&secret));
        self.execute(
            "UPDATE operators SET totp_secret = $2, totp_confirmed_at = NULL, \
             totp_last_step = NULL, updated_at = $3 WHERE id = $1",
            params![operator.id, sealed, self.now()],
        )
        .await?;
        Ok(Enrolment {
            secret: totp::base32(&secret),
            uri: totp::uri(&secret, &operator.email, issuer),
        })
    }

    /// Confirms enrolment with a code from the app: TOTP is on from now, and the recovery codes
    /// (returned, kept only hashed) replace any earlier ones.
    #[tracing::instrument(skip_all)]
    pub async fn confirm_totp(
        &self,
        operator_id: &str,
        code: &str,
        key: &CodeKey,
    ) -> Result<RecoveryCodes, StoreError> {
        let (secret, confirmed) = self.totp_of(operator_id, key).await?.ok_or_else(|| {
            refused(
                "two_factor_not_begun",
                None,
                "begin two-factor enrolment first",
            )
        })?;
        if confirmed {
            return Err(refused(
                "two_factor_on",
                None,
                "two-factor sign-in is already on: reset it first",
            ));
        }
        let now = self.now();
        let step = totp::matching_step(&secret, code, totp::step_of(now.timestamp()))
            .ok_or_else(|| refused("wrong_code", Some("code"), "the code does not match"))?;
        let codes: Vec<String> = (0..RECOVERY_CODES)
            .map(|_| {
                let raw = random_token("", 5);
                format!("{}-{}", &raw[..5], &raw[5..])
            })
            .collect();
        self.write(Confirm {
            operator_id: operator_id.to_owned(),
            step,
            hashes: codes.iter().map(|c| recovery_hash(c)).collect(),
            at: now,
        })
        .await?;
        Ok(RecoveryCodes(codes))
    }

    /// Turns the operator's second factor off (a lost phone): its secret and recovery codes
    /// are gone, and it enrols again at its next sign-in if two-factor is required.
    #[tracing::instrument(skip_all)]
    pub async fn reset_totp(&self, reference: &str) -> Result<Operator, StoreError> {
        let operator = self.find(reference).await?;
        self.write(Reset {
            operator_id: operator.id.clone(),
            at: self.now(),
        })
        .await?;
        self.find(&operator.id).await
    }

    /// Whether every operator must sign in with a second factor.
    #[tracing::instrument(skip_all)]
    pub async fn two_factor_required(&self) -> Result<bool, StoreError> {
        let row: Option<(String,)> = self
            .read_row(
                "SELECT value FROM service_settings WHERE name = 'require_2fa'",
                &[],
            )
            .await?;
        Ok(row.is_some_and(|(value,)| value == "true"))
    }

    /// Requires a second factor of every operator (an owner's setting), or stops requiring it.
    #[tracing::instrument(skip_all)]
    pub async fn require_two_factor(&self, required: bool) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO service_settings (name, value) VALUES ('require_2fa', $1) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            params![required.to_string()],
        )
        .await?;
        Ok(())
    }

    /// What `given` is as the operator's second factor now: a TOTP code's step or a recovery
    /// code's hash (each taken, once, in the session's transaction). `Ok(None)`: the operator
    /// has no confirmed second factor.
    pub(crate) async fn factor(
        &self,
        operator_id: &str,
        given: Option<&str>,
        key: &CodeKey,
    ) -> Result<Option<Option<Factor>>, StoreError> {
        let Some((secret, true)) = self.totp_of(operator_id, key).await? else {
            return Ok(None);
        };
        let Some(given) = given.filter(|g| !g.trim().is_empty()) else {
            return Ok(Some(None));
        };
        let step = totp::step_of(self.now().timestamp());
        Ok(Some(Some(
            match totp::matching_step(&secret, given, step) {
                Some(step) => Factor::Totp(step),
                None => Factor::Recovery(recovery_hash(given)),
            },
        )))
    }
}

/// Takes a second factor in the session's transaction: a TOTP step later than the last taken,
/// or an unused recovery code. Refused (`wrong_second_factor`) otherwise.
pub(crate) async fn take<T: Tx>(
    tx: &mut T,
    operator_id: &str,
    factor: &Factor,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let taken = match factor {
        Factor::Totp(step) => {
            tx.execute(
                "UPDATE operators SET totp_last_step = $2 WHERE id = $1 \
                 AND (totp_last_step IS NULL OR totp_last_step < $2)",
                params![operator_id, *step],
            )
            .await?
        }
        Factor::Recovery(hash) => {
            tx.execute(
                "UPDATE operator_recovery_codes SET used_at = $3 \
                 WHERE operator_id = $1 AND code_hash = $2 AND used_at IS NULL",
                params![operator_id, hash, at],
            )
            .await?
        }
    };
    if taken == 0 {
        return Err(refused(
            "wrong_second_factor",
            Some("secondFactor"),
            "wrong or already used code",
        ));
    }
    Ok(())
}

struct Confirm {
    operator_id: String,
    step: i64,
    hashes: Vec<String>,
    at: DateTime<Utc>,
}

impl Steps for Confirm {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        tx.execute(
            "UPDATE operators SET totp_confirmed_at = $2, totp_last_step = $3, updated_at = $2 \
             WHERE id = $1",
            params![self.operator_id, self.at, self.step],
        )
        .await?;
        tx.execute(
            "DELETE FROM operator_recovery_codes WHERE operator_id = $1",
            params![self.operator_id],
        )
        .await?;
        for hash in &self.hashes {
            tx.execute(
                "INSERT INTO operator_recovery_codes (operator_id, code_hash) VALUES ($1, $2)",
                params![self.operator_id, hash],
            )
            .await?;
        }
        Ok(())
    }
}

struct Reset {
    operator_id: String,
    at: DateTime<Utc>,
}

impl Steps for Reset {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        tx.execute(
            "UPDATE operators SET totp_secret = NULL, totp_confirmed_at = NULL, \
             totp_last_step = NULL, updated_at = $2 WHERE id = $1",
            params![self.operator_id, self.at],
        )
        .await?;
        tx.execute(
            "DELETE FROM operator_recovery_codes WHERE operator_id = $1",
            params![self.operator_id],
        )
        .await?;
        Ok(())
    }
}
