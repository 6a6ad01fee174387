//! A campaign's earn rules: the versions of its rule set, one shown with its rules, a new one
//! set (checked first, every problem named), a rule set tried on sample rows with each row's
//! trace, and a backtest over the campaign's recorded earns. The same store operations and
//! trials as `rewards rules`.

use api::plumbing::{ApiError, Checks, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{FromRequest, Path, Request, State};
use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{Campaign, RuleSetVersion, StoreError};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::schemas::FileBytes;
use crate::state::AdminState;

/// The longest rule set accepted, in characters.
const MAX_SOURCE: usize = 256 * 1024;

/// A version of a campaign's rule set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleSetVersionView {
    pub version: i64,
    pub created_at: DateTime<Utc>,
    /// Whether earns are evaluated by it now (the newest version).
    pub active: bool,
}

/// A rule set with its rules and its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleSetView {
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub active: bool,
    pub rules: Vec<RuleView>,
    /// The rule set as written (TOML).
    pub source: String,
}

/// One rule of a rule set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    pub id: String,
    pub priority: i64,
    /// `add`, `multiply` or `set`.
    pub effect: String,
    /// Whether no rule after it is evaluated once it fires.
    pub stop: bool,
    pub pending_days: Option<u32>,
    pub description: Option<String>,
}

fn view(shown: RuleSetVersion, active: bool) -> Result<RuleSetView, ApiError> {
    let compiled = RuleSet::parse(&shown.source)
        .map_err(|_| ApiError::Internal("a stored rule set no longer compiles".into()))?;
    Ok(RuleSetView {
        version: shown.version,
        created_at: shown.created_at,
        active,
        rules: compiled
            .rules()
            .map(|r| RuleView {
                id: r.id,
                priority: r.priority,
                effect: r.effect.as_str().to_owned(),
                stop: r.stop,
                pending_days: r.pending_days,
                description: Some(r.description).filter(|d| !d.is_empty()),
            })
            .collect(),
        source: shown.source,
    })
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/rules", tag = "rules",
    summary = "List a campaign's rule set versions",
    description = "Newest (the active one) first. None: the campaign awards one token per unit \
        of amount.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<RuleSetVersionView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn list_rule_sets(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
) -> Result<Json<PagedList<RuleSetVersionView>>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let versions = state
        .store()
        .programme()
        .rule_set_versions(&campaign)
        .await?;
    let newest = versions.first().map(|v| v.version);
    Ok(Json(PagedList::of(versions, page, |v| {
        RuleSetVersionView {
            active: Some(v.version) == newest,
            version: v.version,
            created_at: v.created_at,
        }
    })))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/rules/{version}",
    tag = "rules", summary = "Get a rule set version",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("version" = String, Path, description = "a version number, or `active`",
            pattern = "^(active|[1-9][0-9]{0,8})$")),
    responses((status = 200, body = RuleSetView),
        (status = 400, description = "a version that is neither a number nor `active`",
            body = Problem),
        (status = 404, description = "unknown organisation or campaign, or no such version",
            body = Problem)))]
async fn get_rule_set(
    State(state): State<AdminState>,
    Path((org, campaign, version)): Path<(String, String, String)>,
) -> Result<Json<RuleSetView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let wanted = match version.as_str() {
        "active" => None,
        number => Some(
            number
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=999_999_999).contains(n))
                .ok_or_else(|| {
                    let message = "must be a version number or `active`";
                    ApiError::invalid("version", "invalid_value", message)
                })?,
        ),
    };
    let programme = state.store().programme();
    let shown = programme.rule_set(&campaign, wanted).await?;
    let active = match wanted {
        None => true,
        Some(_) => programme.active_rule_set_version(&campaign).await? == Some(shown.version),
    };
    Ok(Json(view(shown, active)?))
}

/// A rule set's TOML source in the body (`application/toml`, `text/plain`, or no content type).
struct Source(String);

impl<S: Send + Sync> FromRequest<S> for Source {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let plain = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/plain"));
        let expected = if plain {
            "text/plain"
        } else {
            "application/toml"
        };
        let bytes = api::plumbing::body_bytes(req, state, expected).await?;
        let text = String::from_utf8(bytes.to_vec())
            .map_err(|_| ApiError::invalid("body", "invalid_body", "is not UTF-8 text"))?;
        source_within("body", &text)?;
        Ok(Source(text))
    }
}

fn source_within(field: &'static str, text: &str) -> Result<(), ApiError> {
    if text.chars().count() > MAX_SOURCE {
        let message = format!("must be at most {MAX_SOURCE} characters");
        return Err(ApiError::invalid(field, "too_long", message));
    }
    Ok(())
}

#[utoipa::path(put, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/rules", tag = "rules",
    summary = "Set a campaign's rule set",
    description = "Compiled first: one with problems is refused with every one of them \
        (`errors`, each naming the rule and key). Stored as the next version, which earns are \
        evaluated by from then on; the versions before stay, to be shown and compared.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    request_body(content = FileBytes, content_type = "text/plain",
        description = "the rule set, TOML (samples/rules/README.md); sent as `text/plain` or \
            `application/toml`"),
    responses((status = 201, body = RuleSetView),
        (status = 400, description = "a rule set with problems", body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem),
        (status = 413, description = "larger than the body limit", body = Problem),
        (status = 415, description = "another content type", body = Problem)))]
async fn set_rule_set(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign)): Path<(String, String)>,
    Source(source): Source,
) -> Result<(axum::http::StatusCode, Json<RuleSetView>), ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let action = Action::new("rules.set")
        .org(org)
        .target(campaign.id.clone())
        .after(serde_json::json!({"source": source}));
    let set = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.programme().set_rule_set(&campaign, &source).await?)
        })
        .await?;
    Ok((axum::http::StatusCode::CREATED, Json(view(set, true)?)))
}

/// The rule set a trial uses: the one given, or the campaign's active one.
async fn candidate(
    state: &AdminState,
    campaign: &Campaign,
    source: Option<String>,
) -> Result<RuleSet, ApiError> {
    let source = match source {
        Some(source) => {
            source_within("rules", &source)?;
            source
        }
        None => match state.store().programme().rule_set(campaign, None).await {
            Ok(active) => active.source,
            // No rule set: one token per unit of amount, as earns get.
            Err(StoreError::NotFound { .. }) => String::new(),
            Err(other) => return Err(other.into()),
        },
    };
    RuleSet::parse(&source).map_err(|errors| ApiError::from(StoreError::InvalidRules(errors)))
}

/// Sample rows to try a rule set on.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RulesTestInput {
    /// The rule set to try (TOML); absent: the campaign's active one.
    #[schema(max_length = 262144)]
    rules: Option<String>,
    /// CSV text: `amount` and `date` (RFC 3339) columns; optionally `id`, `currency`,
    /// `description`, `wallet.tier`, `wallet.balance`, `member.status` and `meta.<path>`. At
    /// most 10,000 rows.
    #[schema(min_length = 1, max_length = 4194304)]
    rows: String,
}

/// A rule set tried on sample rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RulesTestView {
    pub rows: Vec<RowTrialView>,
    /// Rows that could not be read.
    pub unreadable: usize,
}

/// One sample row's tokens and trace, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RowTrialView {
    /// Its line in the CSV (the header is line 1).
    pub line: usize,
    pub id: Option<String>,
    pub amount: Option<String>,
    /// The tokens the row would earn, as a decimal string.
    pub tokens: Option<String>,
    /// Each rule's step, in words.
    pub trace: Vec<String>,
    pub error: Option<String>,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/rules/test",
    tag = "rules", summary = "Try a rule set on sample rows",
    description = "Each row's tokens and trace under the rule set given (or the active one); \
        nothing is written.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    request_body = RulesTestInput,
    responses((status = 200, body = RulesTestView),
        (status = 400, description = "a rule set with problems, or rows that are not CSV with \
            `amount` and `date`", body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn test_rules(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    JsonBody(input): JsonBody<RulesTestInput>,
) -> Result<Json<RulesTestView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let rules = candidate(&state, &campaign, input.rules).await?;
    let trials = store::try_rows(&rules, input.rows.as_bytes())?;
    let rows: Vec<RowTrialView> = trials
        .into_iter()
        .map(|trial| match trial.outcome {
            Ok(tried) => RowTrialView {
                line: trial.line,
                id: Some(tried.id),
                amount: Some(tried.amount),
                tokens: Some(tried.tokens.normalize().to_string()),
                trace: tried.trace,
                error: None,
            },
            Err(error) => RowTrialView {
                line: trial.line,
                id: None,
                amount: None,
                tokens: None,
                trace: Vec::new(),
                error: Some(error),
            },
        })
        .collect();
    let unreadable = rows.iter().filter(|r| r.error.is_some()).count();
    Ok(Json(RulesTestView { rows, unreadable }))
}

/// A backtest to run.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BacktestInput {
    /// The candidate rule set (TOML); absent: the campaign's active one.
    #[schema(max_length = 262144)]
    rules: Option<String>,
    /// The earns dated from this instant...
    #[schema(schema_with = api::plumbing::schema::date_time_required, required = true)]
    from: Option<String>,
    /// ...to this one, included.
    #[schema(schema_with = api::plumbing::schema::date_time_required, required = true)]
    to: Option<String>,
}

/// A candidate rule set over a campaign's recorded earns; decimal strings throughout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BacktestView {
    pub transactions: u64,
    /// Earns without a readable amount, left out.
    pub unreadable: u64,
    pub current_tokens: String,
    pub candidate_tokens: String,
    pub difference: String,
    /// Per rule id (`~` is rounding).
    pub per_rule: Vec<RuleTotalsView>,
    /// The ten wallets whose tokens would change most.
    pub top_wallets: Vec<WalletChangeView>,
    /// Each limit (and the campaign's budget) that cut an earn under the candidate, counted
    /// from nothing used at `from`, earns in date order.
    pub limits: Vec<LimitCutsView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitCutsView {
    /// The rule's id; absent for the campaign's budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The limit as a trace shows it: `member/month`, `meta.store.id/day`, `campaign/month`.
    pub limit: String,
    /// How many earns it cut (the rule did not fire or gave less).
    pub cuts: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleTotalsView {
    pub rule: String,
    pub current: String,
    pub candidate: String,
    pub fired: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletChangeView {
    pub wallet_id: String,
    pub current: String,
    pub candidate: String,
}

fn text(d: Decimal) -> String {
    d.normalize().to_string()
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/rules/backtest",
    tag = "rules", summary = "Backtest a rule set",
    description = "Re-evaluates the campaign's earns dated from `from` to `to` under the rule \
        set given (or the active one) beside what each earned: totals, per rule and the wallets \
        that would change most. Nothing is written.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    request_body = BacktestInput,
    responses((status = 200, body = BacktestView),
        (status = 400, description = "a rule set with problems, or a period missing or ending \
            before it starts", body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn backtest_rules(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    JsonBody(input): JsonBody<BacktestInput>,
) -> Result<Json<BacktestView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let mut checks = Checks::default();
    let from = checks.required_instant("from", input.from);
    let to = checks.required_instant("to", input.to);
    if let (Some(from), Some(to)) = (from, to)
        && to < from
    {
        checks.fail("to", "invalid_value", "must not be before `from`");
    }
    let (from, to) = checks.finish((from, to))?;
    let (Some(from), Some(to)) = (from, to) else {
        return Err(ApiError::Internal("checked dates are missing".into()));
    };
    let rules = candidate(&state, &campaign, input.rules).await?;
    let test = state
        .store()
        .ledger()
        .backtest(&campaign, &rules, from, to)
        .await?;
    Ok(Json(BacktestView {
        transactions: test.transactions,
        unreadable: test.unreadable,
        current_tokens: text(test.current),
        candidate_tokens: text(test.candidate),
        difference: text(test.candidate - test.current),
        per_rule: test
            .per_rule
            .into_iter()
            .map(|t| RuleTotalsView {
                rule: t.rule,
                current: text(t.current),
                candidate: text(t.candidate),
                fired: t.fired,
            })
            .collect(),
        top_wallets: test
            .top_wallets
            .into_iter()
            .map(|w| WalletChangeView {
                wallet_id: w.wallet_id,
                current: text(w.current),
                candidate: text(w.candidate),
            })
            .collect(),
        limits: test
            .limits
            .into_iter()
            .map(|c| LimitCutsView {
                rule: c.rule,
                limit: c.limit,
                cuts: c.cuts,
            })
            .collect(),
    }))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_rule_sets, set_rule_set))
        .routes(routes!(get_rule_set))
        .routes(routes!(test_rules))
        .routes(routes!(backtest_rules))
}
