//! The signed-in operator's own account: who it is and what it may do, its password, and its
//! second factor.

use api::plumbing::{ApiError, JsonBody, Problem};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::audit::Action;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::permissions::OPERATIONS;
use crate::state::AdminState;
use crate::views::OperatorView;

/// The issuer an authenticator app shows beside the account.
const ISSUER: &str = "Rewards";

/// Who the caller is, and what it may do.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub operator: OperatorView,
    /// `session` or `token`: how this request signed in.
    #[schema(pattern = "^(session|token)$")]
    pub via: String,
    /// The operations (`operationId`s of this API) it may use; no other is answered.
    pub operations: Vec<String>,
    /// Whether a second factor is required of every operator.
    pub two_factor_required: bool,
}

#[utoipa::path(get, path = "/admin/v1/me", tag = "me", summary = "Who am I",
    description = "The signed-in operator (or the token's), and the operations it may use.",
    responses((status = 200, body = Me)))]
async fn me(State(state): State<AdminState>, principal: Principal) -> Result<Json<Me>, ApiError> {
    let operations = OPERATIONS
        .iter()
        .filter(|(_, need)| principal.may(*need))
        .map(|(id, _)| (*id).to_owned())
        .collect();
    Ok(Json(Me {
        via: match principal.session_id() {
            Some(_) => "session",
            None => "token",
        }
        .to_owned(),
        operations,
        two_factor_required: state.store().operators().two_factor_required().await?,
        operator: principal.operator.into(),
    }))
}

/// The current password and a new one.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PasswordInput {
    #[schema(max_length = 1024)]
    current_password: String,
    /// At least 12 characters, not the current one.
    #[schema(min_length = 12, max_length = 1024)]
    new_password: String,
}

#[utoipa::path(put, path = "/admin/v1/me/password", tag = "me",
    summary = "Change my password",
    description = "Meets a one-time password's demand to be changed, and ends the operator's \
        other sessions.",
    request_body = PasswordInput,
    responses((status = 200, body = OperatorView), (status = 400, body = Problem),
        (status = 409, description = "`wrong_credentials` (naming `currentPassword`)",
            body = Problem)))]
async fn change_password(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<PasswordInput>,
) -> Result<Json<OperatorView>, ApiError> {
    let id = principal.operator.id.clone();
    let keep = principal.session_id().map(str::to_owned);
    let action = Action::new("operator.change-password").target(id.clone());
    let operator = principal
        .acting(state.store(), action, |store| async move {
            Ok(store
                .operators()
                .change_password(
                    &id,
                    &input.current_password,
                    &input.new_password,
                    keep.as_deref(),
                )
                .await?)
        })
        .await?;
    Ok(Json(operator.into()))
}

/// A TOTP secret to enter into an authenticator app (shown only now).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnrolmentView {
    /// The secret in base 32, for typing in.
    pub secret: String,
    /// An `otpauth://totp/...` URI, for a QR code.
    pub uri: String,
}

#[utoipa::path(post, path = "/admin/v1/me/two-factor", tag = "me",
    summary = "Begin two-factor enrolment",
    description = "A new TOTP secret (RFC 6238: SHA-1, 6 digits, 30 seconds), replacing one not \
        yet confirmed. Confirm it with a code from the app.",
    responses((status = 201, body = EnrolmentView),
        (status = 409, description = "`two_factor_on`: it is on already; an owner resets it",
            body = Problem)))]
async fn begin_two_factor(
    State(state): State<AdminState>,
    principal: Principal,
) -> Result<(StatusCode, Json<EnrolmentView>), ApiError> {
    let action = Action::new("operator.two-factor.begin").target(principal.operator.id.clone());
    let operator = principal.operator.clone();
    let codes = state.app.codes.clone();
    let enrolment = principal
        .acting(state.store(), action, |store| async move {
            Ok(store
                .operators()
                .begin_totp(&operator, &codes, ISSUER)
                .await?)
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(EnrolmentView {
            secret: enrolment.secret,
            uri: enrolment.uri,
        }),
    ))
}

/// A code from the authenticator app.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfirmInput {
    #[schema(max_length = 64)]
    code: String,
}

/// Recovery codes: each signs in once in place of a TOTP code. Shown only now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryCodesView {
    pub recovery_codes: Vec<String>,
}

#[utoipa::path(post, path = "/admin/v1/me/two-factor/confirm", tag = "me",
    summary = "Confirm two-factor enrolment",
    description = "Turns two-factor sign-in on with a first code from the app, and issues ten \
        recovery codes (replacing any earlier ones).",
    request_body = ConfirmInput,
    responses((status = 200, body = RecoveryCodesView), (status = 400, body = Problem),
        (status = 409, description = "`two_factor_not_begun`; `wrong_code` (naming \
            `code`)", body = Problem)))]
async fn confirm_two_factor(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<ConfirmInput>,
) -> Result<Json<RecoveryCodesView>, ApiError> {
    let id = principal.operator.id.clone();
    let action = Action::new("operator.two-factor.confirm").target(id.clone());
    let codes = state.app.codes.clone();
    let recovery = principal
        .acting(state.store(), action, |store| async move {
            Ok(store
                .operators()
                .confirm_totp(&id, &input.code, &codes)
                .await?)
        })
        .await?;
    Ok(Json(RecoveryCodesView {
        recovery_codes: recovery.0,
    }))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(change_password))
        .routes(routes!(begin_two_factor))
        .routes(routes!(confirm_two_factor))
}
