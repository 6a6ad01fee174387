//! The ledger audit: every wallet of the service checked against its transactions and lots
//! (balance = EARN + REFUND - BURN - EXPIRY - REVERSAL, lots and debts agreeing), as `rewards
//! audit` does, through the same store check; and expiring the lots that are due now, as
//! `rewards expire` does (the service also does it every minute).

use api::plumbing::{ApiError, Problem};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use store::Tokens;
use store::audit::Action;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::state::AdminState;

/// What the audit found: nothing, when the ledger agrees with itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerAuditView {
    /// Whether every wallet agrees with its transactions and lots.
    pub consistent: bool,
    pub discrepancies: Vec<DiscrepancyView>,
}

/// A wallet (or one of its transactions) that does not add up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscrepancyView {
    pub wallet_id: String,
    /// For a check of one transaction (`lot`, `reversed`, `hold`): the one it is about.
    pub transaction_id: Option<String>,
    /// `balance`, `earned`, `lots`, `owed`, `held`, `pending`, `hold`, `wallet`, `lot` or
    /// `reversed`.
    pub check: String,
    /// What the wallet (or transaction) says.
    #[schema(value_type = f64)]
    pub recorded: Tokens,
    /// What its transactions (or lots) add up to.
    #[schema(value_type = f64)]
    pub computed: Tokens,
}

#[utoipa::path(get, path = "/admin/v1/ledger/audit", tag = "ledger",
    summary = "Audit the ledger",
    description = "Checks every wallet of the service: its balance, lifetime earnings, held and \
        pending tokens against its transactions, and each lot against its earn's history. A \
        full scan: run it off peak on a large ledger.",
    responses((status = 200, body = LedgerAuditView), (status = 400, body = Problem)))]
async fn audit_ledger(State(state): State<AdminState>) -> Result<Json<LedgerAuditView>, ApiError> {
    let found = state.store().ledger().audit().await?;
    Ok(Json(LedgerAuditView {
        consistent: found.is_empty(),
        discrepancies: found
            .into_iter()
            .map(|d| DiscrepancyView {
                wallet_id: d.wallet_id,
                transaction_id: d.transaction_id,
                check: d.check.to_owned(),
                recorded: d.recorded,
                computed: d.computed,
            })
            .collect(),
    }))
}

/// What expiring due lots did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpiredView {
    /// Lots expired (each an EXPIRY transaction in its wallet).
    pub expired: u64,
}

#[utoipa::path(post, path = "/admin/v1/ledger/expire", tag = "ledger",
    summary = "Expire the lots that are due",
    description = "Every lot of earned tokens whose expiry has come is expired now, each with \
        an EXPIRY transaction, as the service does every minute (and `rewards expire`). \
        Nothing due: 0.",
    responses((status = 200, body = ExpiredView)))]
async fn expire_due(
    State(state): State<AdminState>,
    principal: Principal,
) -> Result<Json<ExpiredView>, ApiError> {
    let action = Action::new("ledger.expire");
    let expired = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.ledger().expire(store.now()).await?)
        })
        .await?;
    Ok(Json(ExpiredView {
        expired: expired as u64,
    }))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(audit_ledger))
        .routes(routes!(expire_due))
}
