//! The batch door's credentials: an organisation's SFTP users (added with a password, a public
//! key or both; keys added; disabled; removed), the server's host key fingerprint for clients
//! to pin, and the addresses banned for failed logins. The same store operations and key
//! parsing as `rewards sftp-user` and `rewards sftp`.

use api::plumbing::{ApiError, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{NewSftpKey, NewSftpUser, SftpUser};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, org_of};
use crate::state::AdminState;

const USERNAME: &str = "the SFTP user's name";

/// An SFTP user: how it logs in, never its password.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SftpUserView {
    pub id: String,
    pub org_id: String,
    pub username: String,
    /// Whether it may log in with a password.
    pub password: bool,
    /// Its public keys.
    pub keys: Vec<SftpKeyView>,
    pub disabled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// A public key an SFTP user logs in with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SftpKeyView {
    /// `SHA256:...`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// The key in OpenSSH's one-line format.
    pub public_key: String,
    pub created_at: DateTime<Utc>,
}

impl From<store::SftpKey> for SftpKeyView {
    fn from(k: store::SftpKey) -> SftpKeyView {
        SftpKeyView {
            fingerprint: k.fingerprint,
            public_key: k.public_key,
            created_at: k.created_at,
        }
    }
}

impl From<SftpUser> for SftpUserView {
    fn from(u: SftpUser) -> SftpUserView {
        SftpUserView {
            id: u.id,
            org_id: u.org_id,
            username: u.username,
            password: u.has_password,
            keys: u.keys.into_iter().map(SftpKeyView::from).collect(),
            disabled_at: u.disabled_at,
            created_at: u.created_at,
        }
    }
}

/// The longest public key accepted (an RSA key of 16,384 bits is about 2,800 characters).
const MAX_KEY: usize = 16384;

/// A public key in OpenSSH's one-line format, or a 400 naming `field`.
fn public_key(field: &'static str, text: &str) -> Result<NewSftpKey, ApiError> {
    if text.chars().count() > MAX_KEY {
        let message = format!("must be at most {MAX_KEY} characters");
        return Err(ApiError::invalid(field, "too_long", message));
    }
    ingest::sftp::keys::parse_public_key(text)
        .map_err(|e| ApiError::invalid(field, "invalid_value", e.to_string()))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/sftp-users", tag = "sftp",
    summary = "List an organisation's SFTP users", description = "By name.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<SftpUserView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_sftp_users(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<SftpUserView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let users = state.store().tenancy().list_sftp_users(&org).await?;
    Ok(Json(PagedList::of(users, page, SftpUserView::from)))
}

/// An SFTP user to add: a password, a public key, or both.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SftpUserInput {
    /// 1 to 64 of a-z, 0-9, `.`, `_` and `-`, not starting with `.` or `-`; unique in the
    /// service.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[a-z0-9_][a-z0-9._-]{0,63}$"
    )]
    username: String,
    /// 12 to 1024 characters, kept only as an argon2id hash.
    #[schema(min_length = 12, max_length = 1024)]
    password: Option<String>,
    /// An OpenSSH public key (`ssh-ed25519 AAAA... comment`, the `.pub` file's line).
    #[schema(min_length = 1, max_length = 16384)]
    public_key: Option<String>,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/sftp-users", tag = "sftp",
    summary = "Add an SFTP user",
    description = "With a password, a public key, or both. It logs in at once, into the \
        organisation's folders.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body = SftpUserInput,
    responses((status = 201, body = SftpUserView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem),
        (status = 409, description = "the username, or the key, is taken", body = Problem)))]
async fn add_sftp_user(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    JsonBody(input): JsonBody<SftpUserInput>,
) -> Result<(StatusCode, Json<SftpUserView>), ApiError> {
    let scope = org_of(&state, &org).await?;
    let key = input
        .public_key
        .as_deref()
        .map(|text| public_key("publicKey", text))
        .transpose()?;
    let action = Action::new("sftp-user.add")
        .org(org)
        .target(input.username.clone())
        .after(serde_json::json!({
            "username": input.username,
            "password": input.password.is_some(),
            "key": key.as_ref().map(|k| k.fingerprint.clone()),
        }));
    let new = NewSftpUser {
        username: input.username,
        password: input.password,
        key,
    };
    let user = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().create_sftp_user(&scope, new).await?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

/// A public key to add to an SFTP user.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SftpKeyInput {
    /// An OpenSSH public key (`ssh-ed25519 AAAA... comment`, the `.pub` file's line).
    #[schema(min_length = 1, max_length = 16384)]
    public_key: String,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/sftp-users/{username}/keys", tag = "sftp",
    summary = "Add a public key to an SFTP user",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("username" = String, Path, description = USERNAME, max_length = 64)),
    request_body = SftpKeyInput,
    responses((status = 201, body = SftpKeyView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, or no SFTP user of it has this name",
            body = Problem),
        (status = 409, description = "an SFTP user holds this key already", body = Problem)))]
async fn add_sftp_key(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, username)): Path<(String, String)>,
    JsonBody(input): JsonBody<SftpKeyInput>,
) -> Result<(StatusCode, Json<SftpKeyView>), ApiError> {
    let scope = org_of(&state, &org).await?;
    let key = public_key("publicKey", &input.public_key)?;
    let action = Action::new("sftp-user.key-add")
        .org(org)
        .target(username.clone())
        .after(serde_json::json!({"fingerprint": key.fingerprint}));
    let added = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().add_sftp_key(&scope, &username, key).await?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(added.into())))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/sftp-users/{username}/disable", tag = "sftp",
    summary = "Disable an SFTP user",
    description = "It may not log in from then on (sessions open already are not cut); one \
        disabled already is answered as it is.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("username" = String, Path, description = USERNAME, max_length = 64)),
    responses((status = 200, body = SftpUserView),
        (status = 404, description = "unknown organisation, or no SFTP user of it has this name",
            body = Problem)))]
async fn disable_sftp_user(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, username)): Path<(String, String)>,
) -> Result<Json<SftpUserView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let action = Action::new("sftp-user.disable")
        .org(org)
        .target(username.clone());
    let user = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().disable_sftp_user(&scope, &username).await?)
        })
        .await?;
    Ok(Json(user.into()))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/sftp-users/{username}", tag = "sftp",
    summary = "Remove an SFTP user",
    description = "With its keys; the batches it uploaded keep its name.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("username" = String, Path, description = USERNAME, max_length = 64)),
    responses((status = 204, description = "removed"),
        (status = 404, description = "unknown organisation, or no SFTP user of it has this name",
            body = Problem)))]
async fn remove_sftp_user(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, username)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = org_of(&state, &org).await?;
    let action = Action::new("sftp-user.remove")
        .org(org)
        .target(username.clone());
    principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().remove_sftp_user(&scope, &username).await?)
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The SFTP server's host key, for clients to pin (`known_hosts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostKeyView {
    /// `SHA256:...`, as `ssh-keygen -l` and clients print it on first connection.
    pub fingerprint: String,
    pub algorithm: String,
    /// The public key in OpenSSH's one-line format.
    pub public_key: String,
}

#[utoipa::path(get, path = "/admin/v1/sftp/host-key", tag = "sftp",
    summary = "The SFTP server's host key",
    description = "Its fingerprint and public key, for a client to check on first connection.",
    responses((status = 200, body = HostKeyView)))]
async fn sftp_host_key(State(state): State<AdminState>) -> Result<Json<HostKeyView>, ApiError> {
    let key = ingest::sftp::keys::host_key(&state.data_dir)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let public = key.public_key();
    Ok(Json(HostKeyView {
        fingerprint: ingest::sftp::keys::fingerprint(public),
        algorithm: public.algorithm().to_string(),
        public_key: public
            .to_openssh()
            .map_err(|e| ApiError::Internal(e.to_string()))?,
    }))
}

/// An address banned from the SFTP door for repeated failed logins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BanView {
    pub address: String,
    pub failures: u32,
    pub banned_at: DateTime<Utc>,
    pub banned_until: DateTime<Utc>,
}

#[utoipa::path(get, path = "/admin/v1/sftp/bans", tag = "sftp",
    summary = "List the addresses banned from SFTP",
    description = "Addresses whose failed logins passed the limit, until their ban ends.",
    params(PagingParams),
    responses((status = 200, body = PagedList<BanView>), (status = 400, body = Problem)))]
async fn list_sftp_bans(
    State(state): State<AdminState>,
    Paging(page): Paging,
) -> Result<Json<PagedList<BanView>>, ApiError> {
    let bans = state.store().tenancy().sftp_bans().await?;
    Ok(Json(PagedList::of(bans, page, |b| BanView {
        address: b.address,
        failures: b.failures,
        banned_at: b.banned_at,
        banned_until: b.banned_until,
    })))
}

#[utoipa::path(delete, path = "/admin/v1/sftp/bans/{address}", tag = "sftp",
    summary = "Lift a ban on an address",
    params(("address" = String, Path, description = "the banned IP address", max_length = 64)),
    responses((status = 204, description = "it may log in again"),
        (status = 404, description = "the address is not banned", body = Problem)))]
async fn lift_sftp_ban(
    State(state): State<AdminState>,
    principal: Principal,
    Path(address): Path<String>,
) -> Result<StatusCode, ApiError> {
    let action = Action::new("sftp.unban").target(address.clone());
    principal
        .acting(state.store(), action, |store| async move {
            match store.tenancy().unban_sftp_address(&address).await? {
                true => Ok(()),
                false => Err(ApiError::NotFound("ban")),
            }
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_sftp_users, add_sftp_user))
        .routes(routes!(add_sftp_key))
        .routes(routes!(disable_sftp_user))
        .routes(routes!(remove_sftp_user))
        .routes(routes!(sftp_host_key))
        .routes(routes!(list_sftp_bans))
        .routes(routes!(lift_sftp_ban))
}
