//! The leaderboard (seed #33) and a member's own place on it, served from the campaign's
//! snapshot (rebuilt by the runtime's leaderboard job), so a request never scans the ledger.
//! Every answer says which snapshot it is (`x-leaderboard-updated-at`) and how long it stays
//! the latest (`Cache-Control`). A campaign's first snapshot is built on demand when no job
//! has built it yet.

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use serde::{Deserialize, Serialize};
use store::{Snapshot, Standing, Tokens};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::{QueryParams, Whole};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_leaderboard))
        .routes(routes!(member_rank))
}

/// The snapshot's time, RFC 3339.
const UPDATED_AT: HeaderName = HeaderName::from_static("x-leaderboard-updated-at");

/// The most neighbours a member's rank shows on each side.
const MAX_NEIGHBOURS: u32 = 10;

/// A ranked member (the seed's LeaderboardEntry, with its rank).
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderboardEntry {
    /// The member's id.
    pub id: String,
    /// 1 is the top.
    pub rank: u64,
    /// The first name and the last name's initial ("Ada L."): nothing more about the member.
    /// `null` when the member has neither (or was deleted since the snapshot).
    pub display_name: Option<String>,
    /// Tokens earned over the member's lifetime in the campaign's wallets (spending does not
    /// lower it).
    #[schema(value_type = f64)]
    pub points: Tokens,
}

impl From<Standing> for LeaderboardEntry {
    fn from(s: Standing) -> Self {
        LeaderboardEntry {
            id: s.member_id,
            rank: s.rank,
            display_name: s.display_name,
            points: s.points,
        }
    }
}

/// A member's place with the entries around it.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberRank {
    /// The member's id.
    pub id: String,
    pub rank: u64,
    pub display_name: Option<String>,
    #[schema(value_type = f64)]
    pub points: Tokens,
    /// How many members the snapshot ranks.
    pub total: u64,
    /// The entries just above, best first (the nearest last).
    pub above: Vec<LeaderboardEntry>,
    /// The entries just below, the nearest first.
    pub below: Vec<LeaderboardEntry>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct RankQuery {
    /// How many entries to show on each side, 0 to 10.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 10, default = 2)]
    neighbours: Whole,
}

#[utoipa::path(get, path = "/v1/leaderboard", tag = "leaderboard", summary = "Get Leaderboard",
    description = "The campaign's members ranked by the tokens their wallets in the campaign have \
        earned over their lifetime (spending does not drop a member), most first; a tie goes to \
        whoever reached the score first. Deleted and inactive members are left out. Served \
        from a snapshot rebuilt every 5 minutes by default: `x-leaderboard-updated-at` is its \
        time and `Cache-Control` the time left until the next. A campaign's first snapshot is \
        built when first asked for.",
    params(PagingParams),
    responses(
        (status = 200, body = PagedList<LeaderboardEntry>, headers(
            ("x-leaderboard-updated-at" = String, description = "When the snapshot read the ledger (RFC 3339)."),
            ("cache-control" = String, description = "`private, max-age=N`: seconds until the next snapshot is due."))),
        (status = 400, body = Problem),
        (status = 503, description = "`leaderboard_pending`: the campaign's first snapshot, built by another request or node, was not published within 30 s; `Retry-After` says when to ask again", body = Problem)))]
async fn get_leaderboard(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
) -> Result<(HeaderMap, Json<PagedList<LeaderboardEntry>>), ApiError> {
    let snapshot = snapshot(&state, &caller).await?;
    let paged = state
        .store
        .community()
        .leaderboard_page(caller.org(), &snapshot, page)
        .await?;
    Ok((
        snapshot_headers(&snapshot, state.store.now()),
        Json(PagedList::from_page(paged, LeaderboardEntry::from)),
    ))
}

#[utoipa::path(get, path = "/v1/leaderboard/members/{memberId}", tag = "leaderboard",
    summary = "A member's rank",
    description = "The member's place in the latest snapshot, with the entries just above and \
        below it.",
    params(("memberId" = String, Path, description = "The member's id or external id."), RankQuery),
    responses(
        (status = 200, body = MemberRank, headers(
            ("x-leaderboard-updated-at" = String, description = "When the snapshot read the ledger (RFC 3339)."),
            ("cache-control" = String, description = "`private, max-age=N`: seconds until the next snapshot is due."))),
        (status = 400, body = Problem),
        (status = 404, description = "`not_found`: no such member; `not_ranked`: the member has no place in the snapshot (nothing earned in the campaign by its time, or inactive)", body = Problem),
        (status = 503, description = "`leaderboard_pending`: the campaign's first snapshot, built by another request or node, was not published within 30 s", body = Problem)))]
async fn member_rank(
    State(state): State<AppState>,
    caller: Caller,
    Path(member): Path<String>,
    QueryParams(query): QueryParams<RankQuery>,
) -> Result<(HeaderMap, Json<MemberRank>), ApiError> {
    let neighbours = query
        .neighbours
        .within(0..=MAX_NEIGHBOURS, 2)
        .map_err(|message| ApiError::invalid("neighbours", "invalid_value", message))?;
    let member = state
        .store
        .members()
        .member_id_by_reference(caller.org(), &member)
        .await?
        .ok_or(ApiError::NotFound("member"))?;
    let snapshot = snapshot(&state, &caller).await?;
    let found = state
        .store
        .community()
        .leaderboard_neighbourhood(caller.org(), &snapshot, &member, neighbours)
        .await?;
    let Some(around) = found else {
        return Err(ApiError::Absent {
            code: "not_ranked",
            field: Some("memberId".into()),
            detail: format!(
                "member `{}` has no place in the leaderboard of {} (nothing earned in this \
                 campaign by then, or not active)",
                member,
                snapshot.built_at.to_rfc3339()
            ),
        });
    };
    let standing = around.standing;
    Ok((
        snapshot_headers(&snapshot, state.store.now()),
        Json(MemberRank {
            id: standing.member_id,
            rank: standing.rank,
            display_name: standing.display_name,
            points: standing.points,
            total: snapshot.entries,
            above: around.above.into_iter().map(Into::into).collect(),
            below: around.below.into_iter().map(Into::into).collect(),
        }),
    ))
}

/// How long a request waits for a first snapshot that another request or node is building.
const FIRST_BUILD_WAIT: Duration = Duration::from_secs(30);
/// How often it looks whether that build is published.
const FIRST_BUILD_LOOK: Duration = Duration::from_millis(50);

/// The campaign's published snapshot. A campaign that has none yet (new, and no node's job has
/// reached it) has its first built here, by the first request to ask: the store's claim lets
/// one build (this request, another, or a background job on any node) and the others wait for
/// it to be published. 503 only if it is not published within `FIRST_BUILD_WAIT`.
async fn snapshot(state: &AppState, caller: &Caller) -> Result<Snapshot, ApiError> {
    let campaign = &caller.context.campaign;
    let deadline = Instant::now() + FIRST_BUILD_WAIT;
    loop {
        if let Some(snapshot) = state
            .store
            .community()
            .leaderboard_snapshot(campaign)
            .await?
        {
            return Ok(snapshot);
        }
        let built = state
            .store
            .community()
            .refresh_leaderboard(campaign, state.settings.leaderboard_refresh)
            .await?;
        if built.is_some() {
            continue;
        }
        if Instant::now() >= deadline {
            return Err(ApiError::NotReady {
                code: "leaderboard_pending",
                detail: "the campaign's first leaderboard snapshot is still being built".into(),
                retry_after: 5,
            });
        }
        tokio::time::sleep(FIRST_BUILD_LOOK).await;
    }
}

fn snapshot_headers(snapshot: &Snapshot, now: chrono::DateTime<chrono::Utc>) -> HeaderMap {
    let left = (snapshot.due_at - now).num_seconds().max(0);
    let mut headers = HeaderMap::new();
    if let Ok(updated) = HeaderValue::from_str(&snapshot.built_at.to_rfc3339()) {
        headers.insert(UPDATED_AT, updated);
    }
    if let Ok(cache) = HeaderValue::from_str(&format!("private, max-age={left}")) {
        headers.insert(header::CACHE_CONTROL, cache);
    }
    headers
}
