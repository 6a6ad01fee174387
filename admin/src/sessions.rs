//! Signing in and out, and the operator's own sessions: listed, and ended one by one ("sign
//! out elsewhere").

use api::plumbing::{ApiError, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use store::{SignIn, StoreError};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Principal, origin};
use crate::state::AdminState;
use crate::views::{OperatorView, SessionView};

/// An e-mail and password, and the second factor of an operator who has one.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInInput {
    #[schema(max_length = 320)]
    email: String,
    #[schema(max_length = 1024)]
    password: String,
    /// The 6-digit code from the authenticator app, or a recovery code.
    #[schema(max_length = 64)]
    second_factor: Option<String>,
}

/// A session opened: its token (shown only now), the session and the operator.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedIn {
    /// Send it as `Authorization: Bearer <token>`.
    pub token: String,
    pub session: SessionView,
    pub operator: OperatorView,
    /// The password is a one-time one: only changing it (and the operator's own account) is
    /// allowed until it is.
    pub must_change_password: bool,
    /// A second factor is required of everyone and this operator has none: only enrolling it
    /// (and the operator's own account) is allowed until it does.
    pub must_enrol_two_factor: bool,
}

#[utoipa::path(post, path = "/admin/v1/sessions", tag = "sessions", summary = "Sign in",
    description = "Checks the e-mail and password (and the second factor, for an operator with \
        one) and opens a session. Five failures of one account, or twenty from one address, \
        within 15 minutes lock signing in for 15 minutes (429, with `Retry-After`). Every \
        attempt is in the audit trail.",
    security(()),
    request_body = SignInInput,
    responses((status = 201, body = SignedIn), (status = 400, body = Problem),
        (status = 401, description = "`wrong_credentials`: wrong e-mail or password; \
            `second_factor_required` (naming `secondFactor`): give the code; \
            `wrong_second_factor`: wrong or already used code", body = Problem),
        (status = 403, description = "`operator_disabled`; `address_not_allowed`: not from \
            this address", body = Problem),
        (status = 429, description = "`locked`: too many failed sign-ins", body = Problem)))]
async fn sign_in(
    State(state): State<AdminState>,
    parts: Parts,
    JsonBody(input): JsonBody<SignInInput>,
) -> Result<(StatusCode, Json<SignedIn>), ApiError> {
    let (address, user_agent, request_id) = origin(&parts.headers, &parts.extensions);
    let attempt = SignIn {
        email: input.email,
        password: input.password,
        second_factor: input.second_factor,
        address,
        user_agent,
        request_id,
    };
    let opened = state
        .store()
        .operators()
        .sign_in(attempt, state.sessions, &state.app.codes)
        .await
        .map_err(refusal)?;
    let current = Some(opened.session.id.clone());
    Ok((
        StatusCode::CREATED,
        Json(SignedIn {
            token: opened.token,
            must_change_password: opened.operator.must_change_password,
            must_enrol_two_factor: opened.must_enrol_two_factor,
            session: SessionView::of(opened.session, current.as_deref()),
            operator: opened.operator.into(),
        }),
    ))
}

/// A sign-in's refusals as HTTP says them: wrong credentials are 401, a refused operator 403.
fn refusal(err: StoreError) -> ApiError {
    match err {
        StoreError::Refused {
            code: code @ ("wrong_credentials" | "second_factor_required" | "wrong_second_factor"),
            field,
            message,
        } => ApiError::Denied {
            code,
            field,
            detail: message,
        },
        StoreError::Refused {
            code: code @ ("operator_disabled" | "address_not_allowed"),
            message,
            ..
        } => ApiError::Forbidden {
            code,
            detail: message,
        },
        other => other.into(),
    }
}

#[utoipa::path(delete, path = "/admin/v1/sessions/current", tag = "sessions",
    summary = "Sign out", description = "Ends the session this request is sent with.",
    responses((status = 204, description = "signed out")))]
async fn sign_out(
    State(state): State<AdminState>,
    principal: Principal,
) -> Result<StatusCode, ApiError> {
    let session = principal.session_id().unwrap_or_default().to_owned();
    revoke(&state, &principal, &session).await
}

#[utoipa::path(get, path = "/admin/v1/sessions", tag = "sessions",
    summary = "List my sessions", description = "The signed-in operator's open sessions, \
        newest first; `current` marks the one this request is sent with.",
    params(PagingParams),
    responses((status = 200, body = PagedList<SessionView>), (status = 400, body = Problem)))]
async fn list_sessions(
    State(state): State<AdminState>,
    principal: Principal,
    Paging(page): Paging,
) -> Result<Json<PagedList<SessionView>>, ApiError> {
    let sessions = state
        .store()
        .operators()
        .sessions(&principal.operator.id, state.sessions)
        .await?;
    let current = principal.session_id();
    Ok(Json(PagedList::of(sessions, page, |s| {
        SessionView::of(s, current)
    })))
}

#[utoipa::path(delete, path = "/admin/v1/sessions/{id}", tag = "sessions",
    summary = "End one of my sessions", description = "Signs out elsewhere: the session \
        stops working at once.",
    params(("id" = String, Path, description = "the session's id", max_length = 64)),
    responses((status = 204, description = "ended"),
        (status = 404, description = "no open session of this operator has this id",
            body = Problem)))]
async fn revoke_session(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    revoke(&state, &principal, &id).await
}

async fn revoke(
    state: &AdminState,
    principal: &Principal,
    session: &str,
) -> Result<StatusCode, ApiError> {
    let action = store::audit::Action::new("session.revoke").target(session);
    let operator = principal.operator.id.clone();
    principal
        .acting(state.store(), action, |store| async move {
            store.operators().revoke_session(&operator, session).await?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(sign_in, list_sessions))
        .routes(routes!(sign_out))
        .routes(routes!(revoke_session))
}
