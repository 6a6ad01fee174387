//! Who a request acts as, and whether it may: the one place the permission table is enforced.
//!
//! `authenticate` runs before every handler. It finds the operation the request asks for (by
//! its route and method, in `Gate`), lets `sign_in` through, and otherwise reads the bearer
//! token: a session (`rwo_...`, from signing in) or an automation token (`rwt_...`). Then, in
//! this order: an operator who must change its password or enrol a second factor may only act
//! on its own account (403); the role must have the operation's need, and a token must carry it
//! in its scopes (403); a per-organisation role naming an organisation it is not given gets 404,
//! as if it did not exist. The `Principal` it puts into the request is what handlers act as.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use api::plumbing::{ApiError, Peer, REQUEST_ID};
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use store::audit::{Action, Actor, ActorKind, Trail};
use store::{Operator, Store, StoreError};

use crate::permissions::Need;
use crate::state::AdminState;

/// What a 401 tells the caller to send.
const SIGN_IN: &str = "sign in (POST /admin/v1/sessions) and send the session's token, or an \
    automation token, as `Authorization: Bearer <token>`";

/// Each route's operation and need, by method and route template.
#[derive(Debug, Default)]
pub struct Gate(HashMap<(Method, String), (&'static str, Need)>);

impl Gate {
    /// The gate of the operations `document` describes; every one must be in the table.
    pub fn of(document: &utoipa::openapi::OpenApi) -> Gate {
        let mut routes = HashMap::new();
        for (path, item) in &document.paths.paths {
            let operations = [
                (Method::GET, &item.get),
                (Method::POST, &item.post),
                (Method::PUT, &item.put),
                (Method::PATCH, &item.patch),
                (Method::DELETE, &item.delete),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                let id = operation.operation_id.as_deref().unwrap_or_default();
                let (id, need) = crate::permissions::OPERATIONS
                    .iter()
                    .find(|(name, _)| *name == id)
                    .copied()
                    .unwrap_or_else(|| panic!("operation `{id}` is not in the permission table"));
                routes.insert((method, path.clone()), (id, need));
            }
        }
        Gate(routes)
    }

    fn find(&self, method: &Method, route: &str) -> Option<(&'static str, Need)> {
        self.0.get(&(method.clone(), route.to_owned())).copied()
    }
}

/// How the caller signed in.
#[derive(Debug, Clone)]
pub enum Via {
    Session {
        id: String,
    },
    /// An automation token, with the needs it may use.
    Token {
        scopes: Vec<Need>,
    },
}

/// The signed-in operator a request acts as, and where it comes from.
#[derive(Debug, Clone)]
pub struct Principal {
    pub operator: Operator,
    pub via: Via,
    pub address: Option<IpAddr>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
}

impl Principal {
    /// Whether the principal may use an operation needing `need` (its role, and its token's
    /// scopes).
    pub fn may(&self, need: Need) -> bool {
        if !need.allows(self.operator.role) {
            return false;
        }
        match (&self.via, need) {
            (_, Need::Open | Need::Own) | (Via::Session { .. }, _) => true,
            (Via::Token { .. }, Need::Account | Need::Session) => false,
            (Via::Token { scopes, .. }, need) => scopes.contains(&need),
        }
    }

    /// Whether the principal acts on organisation `org_id` (every one, for `owner` and `admin`).
    pub fn reaches(&self, org_id: &str) -> bool {
        !self.operator.role.per_organisation() || self.operator.orgs.iter().any(|o| o == org_id)
    }

    /// The session it signed in with, if not a token.
    pub fn session_id(&self) -> Option<&str> {
        match &self.via {
            Via::Session { id } => Some(id),
            Via::Token { .. } => None,
        }
    }

    pub fn actor(&self) -> Actor {
        Actor {
            kind: match self.via {
                Via::Session { .. } => ActorKind::Operator,
                Via::Token { .. } => ActorKind::Token,
            },
            id: Some(self.operator.id.clone()),
            name: self.operator.email.clone(),
            address: self.address.map(|a| a.to_string()),
            user_agent: self.user_agent.clone(),
            request_id: self.request_id.clone(),
        }
    }

    /// Runs `change` on a store acting for this principal: each of its writes is recorded as
    /// `action` in the audit trail, in the write's own transaction (a failure, as one entry).
    pub async fn acting<T, F>(
        &self,
        store: &Store,
        action: Action,
        change: impl FnOnce(Store) -> F,
    ) -> Result<T, ApiError>
    where
        F: Future<Output = Result<T, ApiError>>,
    {
        store.acting(Trail::new(self.actor(), action), change).await
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Principal>().cloned().ok_or_else(|| {
            ApiError::Internal("a handler that needs an operator is not behind authenticate".into())
        })
    }
}

/// Where a request comes from: its connection's address, its user agent and its id.
pub fn origin(
    headers: &HeaderMap,
    extensions: &Extensions,
) -> (Option<IpAddr>, Option<String>, Option<String>) {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(512).collect::<String>())
    };
    (
        extensions.get::<Peer>().map(|peer| peer.0.ip()),
        text(header::USER_AGENT.as_str()),
        text(REQUEST_ID.as_str()),
    )
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn forbidden(code: &'static str, detail: impl Into<String>) -> ApiError {
    ApiError::Forbidden {
        code,
        detail: detail.into(),
    }
}

pub async fn authenticate(
    State((state, gate)): State<(AdminState, Arc<Gate>)>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let Some((operation, need)) = route.and_then(|route| gate.find(request.method(), &route))
    else {
        // Not an operation: the router answers (404, 405).
        return Ok(next.run(request).await);
    };
    if need == Need::Open {
        return Ok(next.run(request).await);
    }
    let token = bearer(request.headers()).ok_or(ApiError::Unauthenticated(SIGN_IN))?;
    let operators = state.store().operators();
    let (operator, via, two_factor_required) = if token.starts_with("rwt_") {
        let (operator, token) = operators
            .authenticate_token(token)
            .await?
            .ok_or(ApiError::Unauthenticated(SIGN_IN))?;
        let scopes = token.scopes.iter().filter_map(|s| Need::scope(s)).collect();
        (operator, Via::Token { scopes }, false)
    } else {
        let signed_in = operators
            .authenticate(token, state.sessions)
            .await?
            .ok_or(ApiError::Unauthenticated(SIGN_IN))?;
        let via = Via::Session {
            id: signed_in.session.id,
        };
        (signed_in.operator, via, signed_in.two_factor_required)
    };
    let (address, user_agent, request_id) = origin(request.headers(), request.extensions());
    let principal = Principal {
        operator,
        via,
        address,
        user_agent,
        request_id,
    };
    // What a session signed in with a one-time password, or without a second factor required
    // of everyone, may do: its own account. A token was made by a session that had met both.
    if !matches!(need, Need::Account | Need::Own) && principal.session_id().is_some() {
        if principal.operator.must_change_password {
            return Err(forbidden(
                "password_change_required",
                "change your one-time password first (PUT /admin/v1/me/password)",
            ));
        }
        if !principal.operator.two_factor && two_factor_required {
            return Err(forbidden(
                "two_factor_required",
                "two-factor sign-in is required: enrol it first (POST /admin/v1/me/two-factor)",
            ));
        }
    }
    if !principal.may(need) {
        let detail = match principal.via {
            Via::Token { .. } if need.allows(principal.operator.role) => format!(
                "this token's scopes do not include `{}`, which `{operation}` needs",
                need.as_str()
            ),
            Via::Token { .. } if matches!(need, Need::Account | Need::Session) => {
                format!("`{operation}` needs a signed-in session, not an automation token")
            }
            _ => format!(
                "the `{}` role may not use `{operation}`",
                principal.operator.role
            ),
        };
        return Err(forbidden("not_permitted", detail));
    }
    // A per-organisation role names only its organisations: another's answers as unknown.
    let (mut parts, body) = request.into_parts();
    if let Ok(params) = RawPathParams::from_request_parts(&mut parts, &()).await
        && let Some((_, org)) = params.iter().find(|(name, _)| *name == "org")
        && !principal.reaches(org)
    {
        return Err(StoreError::NotFound {
            what: "organisation",
        }
        .into());
    }
    let mut request = Request::from_parts(parts, body);
    request.extensions_mut().insert(principal);
    Ok(next.run(request).await)
}
