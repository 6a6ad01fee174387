//! How much an operator may adjust a wallet by hand: a limit per adjustment for each role that
//! may adjust (`owner`, `support`), and the threshold above which an adjustment waits for a
//! second operator's approval. An owner's settings, kept in `service_settings`.

use seam::{StoreError, Tokens};

use crate::{Operators, Role};

/// The limits: `None` is no limit (or, for the threshold, no approval needed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdjustmentLimits {
    pub owner: Option<Tokens>,
    pub support: Option<Tokens>,
    pub approval_over: Option<Tokens>,
}

impl Default for AdjustmentLimits {
    /// An owner adjusts without limit, support up to 1,000 tokens at a time; nothing waits for
    /// approval until an owner sets a threshold.
    fn default() -> Self {
        AdjustmentLimits {
            owner: None,
            support: Some(Tokens::whole(1_000)),
            approval_over: None,
        }
    }
}

impl AdjustmentLimits {
    /// The most `role` may adjust at a time (`Some(0)` for a role that may not adjust).
    pub fn limit_of(&self, role: Role) -> Option<Tokens> {
        match role {
            Role::Owner => self.owner,
            Role::Support => self.support,
            Role::Admin | Role::OrgAdmin | Role::Viewer => Some(Tokens::ZERO),
        }
    }
}

const NAMES: [&str; 3] = [
    "adjustment_limit_owner",
    "adjustment_limit_support",
    "adjustment_approval_over",
];

fn text(tokens: Option<Tokens>) -> String {
    tokens.map_or_else(|| "none".to_owned(), |t| t.micros().to_string())
}

fn tokens(name: &str, text: &str) -> Result<Option<Tokens>, StoreError> {
    match text {
        "none" => Ok(None),
        micros => micros
            .parse()
            .map(|m| Some(Tokens::from_micros(m)))
            .map_err(|_| StoreError::UnknownStored {
                table: "service_settings",
                column: "value",
                value: format!("{name} = {micros}"),
            }),
    }
}

/// A limit given: at least 0.
fn check(field: &'static str, tokens: Option<Tokens>) -> Result<(), StoreError> {
    match tokens {
        Some(t) if t.micros() < 0 => Err(StoreError::invalid(field, "must be at least 0")),
        _ => Ok(()),
    }
}

impl Operators {
    /// The adjustment limits as an owner set them (the defaults where not).
    #[tracing::instrument(skip_all)]
    pub async fn adjustment_limits(&self) -> Result<AdjustmentLimits, StoreError> {
        let rows: Vec<(String, String)> = self
            .read_rows(
                "SELECT name, value FROM service_settings WHERE name IN ($1, $2, $3)",
                params![NAMES[0], NAMES[1], NAMES[2]],
            )
            .await?;
        let mut limits = AdjustmentLimits::default();
        for (name, value) in rows {
            let slot = match name.as_str() {
                "adjustment_limit_owner" => &mut limits.owner,
                "adjustment_limit_support" => &mut limits.support,
                _ => &mut limits.approval_over,
            };
            *slot = tokens(&name, &value)?;
        }
        Ok(limits)
    }

    /// Sets the adjustment limits (an owner's setting). `Invalid` naming `owner`, `support` or
    /// `approvalOver` for a limit below 0.
    #[tracing::instrument(skip_all)]
    pub async fn set_adjustment_limits(&self, limits: AdjustmentLimits) -> Result<(), StoreError> {
        check("owner", limits.owner)?;
        check("support", limits.support)?;
        check("approvalOver", limits.approval_over)?;
        let values = [
            text(limits.owner),
            text(limits.support),
            text(limits.approval_over),
        ];
        let args = params![
            NAMES[0], values[0], NAMES[1], values[1], NAMES[2], values[2]
        ];
        self.execute(
            "INSERT INTO service_settings (name, value) VALUES ($1, $2), ($3, $4), ($5, $6) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            args,
        )
        .await?;
        Ok(())
    }
}
