//! The signed-in operator's automation tokens: made with a name, scopes and an expiry (the
//! token shown only then), listed, revoked. A token acts as its operator, within both its
//! operator's role and its scopes; it cannot make tokens, change a password or sign out.

use api::plumbing::{ApiError, FieldError, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::NewToken;
use store::audit::Action;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::permissions::Need;
use crate::state::AdminState;
use crate::views::TokenView;

/// A token to make.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenInput {
    /// What it is for (a script's name), 1 to 100 characters, not blank, no NUL.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000]*[^\\s\\u0000\\u0085][^\\u0000]*$"
    )]
    name: String,
    /// What it may do, within the operator's role: at least one of `read`, `configure`,
    /// `support`, `service`, `operators`.
    #[schema(schema_with = crate::schemas::scopes)]
    scopes: Vec<String>,
    /// When it stops working: later than now, within 366 days.
    #[schema(schema_with = api::plumbing::schema::date_time_required)]
    expires_at: String,
}

/// A token made: its secret (shown only now) and its record.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    /// Send it as `Authorization: Bearer <token>`.
    pub token: String,
    #[serde(flatten)]
    pub record: TokenView,
}

#[utoipa::path(post, path = "/admin/v1/tokens", tag = "tokens",
    summary = "Make an automation token",
    request_body = TokenInput,
    responses((status = 201, body = CreatedToken), (status = 400, body = Problem)))]
async fn create_token(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<TokenInput>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let mut errors = Vec::new();
    for (n, scope) in input.scopes.iter().enumerate() {
        match Need::scope(scope) {
            Some(need) if !need.allows(principal.operator.role) => {
                errors.push(FieldError::new(
                    format!("scopes[{n}]"),
                    "not_allowed",
                    format!(
                        "the `{}` role does not have `{scope}`",
                        principal.operator.role
                    ),
                ));
            }
            Some(_) => {}
            None => errors.push(FieldError::new(
                format!("scopes[{n}]"),
                "invalid_value",
                "use read, configure, support, service or operators",
            )),
        }
    }
    let expires_at = api::plumbing::date_time(&input.expires_at);
    if expires_at.is_none() {
        errors.push(FieldError::new(
            "expiresAt",
            "invalid_value",
            "must be an RFC 3339 date-time",
        ));
    }
    let Some(expires_at) = expires_at.filter(|_| errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let new = NewToken {
        name: input.name,
        scopes: input.scopes,
        expires_at,
    };
    let operator = principal.operator.id.clone();
    let action = Action::new("token.create").target(operator.clone()).after(
        serde_json::json!({ "name": new.name, "scopes": new.scopes, "expiresAt": expires_at }),
    );
    let (record, token) = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.operators().create_token(&operator, new).await?)
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            token,
            record: record.into(),
        }),
    ))
}

#[utoipa::path(get, path = "/admin/v1/tokens", tag = "tokens",
    summary = "List my automation tokens", description = "Newest first, revoked and expired \
        ones included.",
    params(PagingParams),
    responses((status = 200, body = PagedList<TokenView>), (status = 400, body = Problem)))]
async fn list_tokens(
    State(state): State<AdminState>,
    principal: Principal,
    Paging(page): Paging,
) -> Result<Json<PagedList<TokenView>>, ApiError> {
    let tokens = state
        .store()
        .operators()
        .tokens(&principal.operator.id)
        .await?;
    Ok(Json(PagedList::of(tokens, page, TokenView::from)))
}

#[utoipa::path(delete, path = "/admin/v1/tokens/{id}", tag = "tokens",
    summary = "Revoke an automation token", description = "It stops working at once; one \
        revoked already is answered as it is.",
    params(("id" = String, Path, description = "the token's id", max_length = 64)),
    responses((status = 200, body = TokenView),
        (status = 404, description = "the operator has no token with this id", body = Problem)))]
async fn revoke_token(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<TokenView>, ApiError> {
    let operator = principal.operator.id.clone();
    let action = Action::new("token.revoke").target(id.clone());
    let token = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.operators().revoke_token(&operator, &id).await?)
        })
        .await?;
    Ok(Json(token.into()))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(revoke_token))
}
