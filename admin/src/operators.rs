//! Operators, managed by an owner: added (with a one-time password, shown once), listed,
//! disabled and enabled, their password or second factor reset, removed; and the service's
//! sign-in settings. The same store operations and checks as `rewards operator`.

use api::plumbing::{ApiError, FieldError, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{NewOperator, Operator, Role, StoreError};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::state::AdminState;
use crate::views::OperatorView;

/// An operator to add.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorInput {
    /// An e-mail address (name@domain), kept in lower case.
    #[schema(
        min_length = 3,
        max_length = 254,
        pattern = "^[^@\\s\\u0000-\\u001f\\u007f-\\u009f]+@[^@\\s\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    email: String,
    #[schema(schema_with = crate::schemas::role)]
    role: String,
    /// For `org-admin`, `support` and `viewer`: the organisations (ids or names) it acts on, at
    /// least one; none for `owner` and `admin`.
    #[serde(default)]
    #[schema(max_items = 100)]
    orgs: Vec<String>,
    /// CIDR blocks it may sign in from (`10.0.0.0/8`); none: anywhere.
    #[serde(default)]
    #[schema(max_items = 100)]
    allowed_addresses: Vec<String>,
}

/// An operator with its one-time password, shown only now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WithPassword {
    /// To be changed at the first sign-in.
    pub password: String,
    pub operator: OperatorView,
}

fn with_password((operator, password): (Operator, store::Password)) -> WithPassword {
    WithPassword {
        password: password.reveal().to_owned(),
        operator: operator.into(),
    }
}

#[utoipa::path(post, path = "/admin/v1/operators", tag = "operators",
    summary = "Add an operator",
    description = "With a one-time password (in the answer only), to be changed at the first \
        sign-in.",
    request_body = OperatorInput,
    responses((status = 201, body = WithPassword), (status = 400, body = Problem),
        (status = 409, description = "`already_exists`: the e-mail is taken", body = Problem)))]
async fn add_operator(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<OperatorInput>,
) -> Result<(StatusCode, Json<WithPassword>), ApiError> {
    let role = role_of(&input.role)?;
    let orgs = org_ids(&state, &input.orgs).await?;
    let new = NewOperator {
        email: input.email,
        role,
        orgs,
        allowed_addresses: input.allowed_addresses,
    };
    let action = Action::new("operator.add").target(new.email.clone()).after(
        serde_json::json!({"email": new.email, "role": role, "orgs": new.orgs,
            "allowedAddresses": new.allowed_addresses}),
    );
    let added = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.operators().add(new).await?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(with_password(added))))
}

#[utoipa::path(get, path = "/admin/v1/operators", tag = "operators",
    summary = "List operators", description = "In the order they were added.",
    params(PagingParams),
    responses((status = 200, body = PagedList<OperatorView>), (status = 400, body = Problem)))]
async fn list_operators(
    State(state): State<AdminState>,
    Paging(page): Paging,
) -> Result<Json<PagedList<OperatorView>>, ApiError> {
    let all = state.store().operators().list().await?;
    Ok(Json(PagedList::of(all, page, OperatorView::from)))
}

#[utoipa::path(get, path = "/admin/v1/operators/{id}", tag = "operators",
    summary = "Get an operator",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    responses((status = 200, body = OperatorView),
        (status = 404, description = "unknown operator", body = Problem)))]
async fn get_operator(
    State(state): State<AdminState>,
    Path(id): Path<String>,
) -> Result<Json<OperatorView>, ApiError> {
    Ok(Json(state.store().operators().find(&id).await?.into()))
}

/// Refuses a change an operator would make to its own account here (it could lock itself
/// out): its password and second factor are changed through `/admin/v1/me`, and another owner
/// disables it, removes it or changes its role.
/// Checked in the action, so that a refusal is in the audit trail.
async fn not_self(store: &store::Store, caller: &str, id: &str) -> Result<(), ApiError> {
    let target = store.operators().find(id).await?;
    if target.id == caller {
        return Err(ApiError::Refused {
            code: "own_account",
            field: None,
            detail: "an operator cannot do this to its own account: another owner can".into(),
        });
    }
    Ok(())
}

/// One change to one operator (not the caller), recorded as `operation`.
async fn change(
    state: &AdminState,
    principal: &Principal,
    operation: &'static str,
    id: String,
    change: impl AsyncFnOnce(&store::Operators, &str) -> Result<Operator, StoreError>,
) -> Result<Json<OperatorView>, ApiError> {
    let action = Action::new(operation).target(id.clone());
    let caller = principal.operator.id.clone();
    let operator = principal
        .acting(state.store(), action, |store| async move {
            not_self(&store, &caller, &id).await?;
            Ok(change(store.operators(), &id).await?)
        })
        .await?;
    Ok(Json(operator.into()))
}

#[utoipa::path(post, path = "/admin/v1/operators/{id}/disable", tag = "operators",
    summary = "Disable an operator",
    description = "It cannot sign in, and its sessions and tokens stop working at once.",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    responses((status = 200, body = OperatorView),
        (status = 404, description = "unknown operator", body = Problem),
        (status = 409, description = "`last_owner`: the last enabled owner; `own_account`: \
            the caller's own", body = Problem)))]
async fn disable_operator(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<OperatorView>, ApiError> {
    change(&state, &principal, "operator.disable", id, async |o, id| {
        o.disable(id).await
    })
    .await
}

#[utoipa::path(post, path = "/admin/v1/operators/{id}/enable", tag = "operators",
    summary = "Enable an operator",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    responses((status = 200, body = OperatorView),
        (status = 404, description = "unknown operator", body = Problem),
        (status = 409, description = "`own_account`: the caller's own", body = Problem)))]
async fn enable_operator(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<OperatorView>, ApiError> {
    change(&state, &principal, "operator.enable", id, async |o, id| {
        o.enable(id).await
    })
    .await
}

#[utoipa::path(post, path = "/admin/v1/operators/{id}/two-factor-reset", tag = "operators",
    summary = "Turn an operator's second factor off",
    description = "For an operator who lost its authenticator app and recovery codes; it enrols \
        again.",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    responses((status = 200, body = OperatorView),
        (status = 404, description = "unknown operator", body = Problem),
        (status = 409, description = "`own_account`: the caller's own (see /admin/v1/me)",
            body = Problem)))]
async fn reset_operator_two_factor(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<OperatorView>, ApiError> {
    change(
        &state,
        &principal,
        "operator.reset-2fa",
        id,
        async |o, id| o.reset_totp(id).await,
    )
    .await
}

#[utoipa::path(delete, path = "/admin/v1/operators/{id}", tag = "operators",
    summary = "Remove an operator",
    description = "Its account, sessions and tokens are deleted; its entries stay in the audit \
        trail.",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    responses((status = 200, description = "the operator as it was", body = OperatorView),
        (status = 404, description = "unknown operator", body = Problem),
        (status = 409, description = "`last_owner`: the last enabled owner; `own_account`: \
            the caller's own", body = Problem)))]
async fn remove_operator(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<OperatorView>, ApiError> {
    change(&state, &principal, "operator.remove", id, async |o, id| {
        o.remove(id).await
    })
    .await
}

#[utoipa::path(post, path = "/admin/v1/operators/{id}/password-reset", tag = "operators",
    summary = "Reset an operator's password",
    description = "A new one-time password (in the answer only), to be changed at its next \
        sign-in.",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    responses((status = 200, body = WithPassword),
        (status = 404, description = "unknown operator", body = Problem),
        (status = 409, description = "`own_account`: the caller's own (see /admin/v1/me)",
            body = Problem)))]
async fn reset_operator_password(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<WithPassword>, ApiError> {
    let action = Action::new("operator.reset-password").target(id.clone());
    let caller = principal.operator.id.clone();
    let reset = principal
        .acting(state.store(), action, |store| async move {
            not_self(&store, &caller, &id).await?;
            Ok(store.operators().reset_password(&id).await?)
        })
        .await?;
    Ok(Json(with_password(reset)))
}

/// A role, and the organisations it acts on.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleInput {
    #[schema(schema_with = crate::schemas::role)]
    role: String,
    /// For `org-admin`, `support` and `viewer`: the organisations (ids or names) it acts on, at
    /// least one; none for `owner` and `admin`.
    #[serde(default)]
    #[schema(max_items = 100)]
    orgs: Vec<String>,
}

/// The organisations `references` name, as ids; an unknown one is a 400 naming it (`orgs[1]`),
/// not a 404, which would say the operator in the path is unknown.
async fn org_ids(state: &AdminState, references: &[String]) -> Result<Vec<String>, ApiError> {
    let mut ids = Vec::with_capacity(references.len());
    let mut errors = Vec::new();
    for (n, org) in references.iter().enumerate() {
        match state.store().tenancy().find_org(org).await {
            Ok(found) => ids.push(found.id),
            Err(StoreError::NotFound { .. } | StoreError::Invalid { .. }) => {
                errors.push(FieldError::new(
                    format!("orgs[{n}]"),
                    "invalid_value",
                    format!("no organisation is `{org}`"),
                ));
            }
            Err(other) => return Err(other.into()),
        }
    }
    if errors.is_empty() {
        Ok(ids)
    } else {
        Err(ApiError::validation(errors))
    }
}

fn role_of(text: &str) -> Result<Role, ApiError> {
    Role::parse(text.trim()).ok_or_else(|| {
        ApiError::invalid(
            "role",
            "invalid_value",
            "use owner, admin, org-admin, support or viewer",
        )
    })
}

#[utoipa::path(put, path = "/admin/v1/operators/{id}/role", tag = "operators",
    summary = "Set an operator's role",
    description = "Its role and organisations, from its next request on.",
    params(("id" = String, Path, description = "the operator's id or e-mail", max_length = 320)),
    request_body = RoleInput,
    responses((status = 200, body = OperatorView), (status = 400, body = Problem),
        (status = 404, description = "unknown operator", body = Problem),
        (status = 409, description = "`last_owner`: the last enabled owner; `own_account`: \
            the caller's own", body = Problem)))]
async fn set_operator_role(
    State(state): State<AdminState>,
    principal: Principal,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<RoleInput>,
) -> Result<Json<OperatorView>, ApiError> {
    let role = role_of(&input.role)?;
    let orgs = org_ids(&state, &input.orgs).await?;
    let caller = principal.operator.id.clone();
    let action = Action::new("operator.set-role")
        .target(id.clone())
        .after(serde_json::json!({"role": role, "orgs": orgs}));
    let operator = principal
        .acting(state.store(), action, |store| async move {
            not_self(&store, &caller, &id).await?;
            Ok(store.operators().set_role(&id, role, orgs).await?)
        })
        .await?;
    Ok(Json(operator.into()))
}

/// The service's sign-in settings.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsView {
    /// Whether every operator must sign in with a second factor (one without may then only
    /// enrol it).
    pub two_factor_required: bool,
}

#[utoipa::path(get, path = "/admin/v1/settings", tag = "operators",
    summary = "Get the sign-in settings",
    responses((status = 200, body = SettingsView)))]
async fn get_settings(State(state): State<AdminState>) -> Result<Json<SettingsView>, ApiError> {
    Ok(Json(SettingsView {
        two_factor_required: state.store().operators().two_factor_required().await?,
    }))
}

#[utoipa::path(put, path = "/admin/v1/settings", tag = "operators",
    summary = "Set the sign-in settings",
    request_body = SettingsView,
    responses((status = 200, body = SettingsView), (status = 400, body = Problem)))]
async fn set_settings(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<SettingsView>,
) -> Result<Json<SettingsView>, ApiError> {
    let required = input.two_factor_required;
    let action = Action::new("operator.require-2fa")
        .after(serde_json::json!({ "twoFactorRequired": required }));
    principal
        .acting(state.store(), action, |store| async move {
            Ok(store.operators().require_two_factor(required).await?)
        })
        .await?;
    Ok(Json(input))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(add_operator, list_operators))
        .routes(routes!(get_operator, remove_operator))
        .routes(routes!(disable_operator))
        .routes(routes!(enable_operator))
        .routes(routes!(reset_operator_password))
        .routes(routes!(reset_operator_two_factor))
        .routes(routes!(set_operator_role))
        .routes(routes!(get_settings, set_settings))
}
