//! What every page is made of: the request's context (its base URL, the operator's session as
//! an in-process admin client, the CSRF token), the frame around each page (the navigation the
//! operator's role may use), and failures shown as pages.

use std::collections::HashSet;

use admin::views_of::{CampaignView, Me, OrgView};
use api::plumbing::PagedList;
use api::plumbing::Peer;
use askama::Template;
use axum::extract::{FromRef, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use crate::ConsoleState;
use crate::assets::{AssetPaths, paths};
use crate::client::{Admin, Problem, enc};
use crate::security::{SESSION_COOKIE, SIGN_IN_COOKIE, base_of, cookie, csrf_of};

/// One request's context.
pub struct Ctx {
    /// The page's `<base href>`: the console's root, relative to this page.
    pub base: String,
    pub admin: Admin,
    /// The token forms and htmx requests must send back.
    pub csrf: String,
    pub browser: HeaderMap,
    /// Whether htmx sent it (a fragment is answered, not a page).
    pub htmx: bool,
    /// Now, by the store's clock.
    pub now: chrono::DateTime<chrono::Utc>,
    /// What a redirect after a form says was done (`?done=`), one of `NOTICES`.
    done: Option<&'static str>,
}

/// What a form that succeeded says on the page it leads to, by its `done` key.
const NOTICES: &[(&str, &str)] = &[
    (
        "mapping-stored",
        "The mapping is stored: files it matches are read by it.",
    ),
    ("mapping-removed", "The mapping is removed."),
    ("policy-saved", "The policy is saved."),
    ("tier-added", "The tier is added."),
    ("tier-removed", "The tier is removed."),
    (
        "member-erased",
        "The member's personal data is erased; its wallets and history stay.",
    ),
    ("campaign-added", "The campaign is added."),
    (
        "rules-activated",
        "The rule set is active: earns are evaluated by it from now on.",
    ),
    ("operator-changed", "The operator is changed."),
    ("operator-removed", "The operator is removed."),
    (
        "two-factor-reset",
        "Two-step sign-in is off for that operator: they set it up again.",
    ),
    ("settings-saved", "The sign-in settings are saved."),
    (
        "export-started",
        "The export is being written: it appears below when done.",
    ),
    ("schedule-saved", "The daily export is set."),
    ("schedule-removed", "The daily export is stopped."),
    ("password", "Your password is changed."),
    ("session-ended", "That session is signed out."),
    ("signed-out-elsewhere", "Every other session is signed out."),
    ("adjusted", "The adjustment is applied."),
    (
        "adjustment-pending",
        "The adjustment waits for another operator's approval.",
    ),
    ("approved", "The adjustment is approved and applied."),
    ("rejected", "The adjustment is rejected."),
    (
        "review-approved",
        "The review is approved and listed again.",
    ),
    ("review-removed", "The review is removed."),
    (
        "key-revoked",
        "The key is revoked: requests with it get 401 from now on.",
    ),
    (
        "sftp-user-added",
        "The SFTP user is added and may log in now.",
    ),
    ("sftp-key-added", "The public key is added."),
    (
        "sftp-user-disabled",
        "The SFTP user is disabled: it can no longer log in.",
    ),
    ("sftp-user-removed", "The SFTP user is removed."),
    ("webhook-changed", "The endpoint is changed."),
    (
        "webhook-removed",
        "The endpoint is removed, with its pending deliveries and log.",
    ),
    (
        "webhook-test-sent",
        "A test event is on its way to the endpoint.",
    ),
    (
        "redelivery-queued",
        "The events are queued for delivery again.",
    ),
];

impl<S: Send + Sync> FromRequestParts<S> for Ctx
where
    ConsoleState: FromRef<S>,
{
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Ctx, Failure> {
        let state = ConsoleState::from_ref(state);
        let token = cookie(&parts.headers, SESSION_COOKIE).map(str::to_owned);
        let csrf = match &token {
            Some(token) => csrf_of(token),
            None => cookie(&parts.headers, SIGN_IN_COOKIE)
                .unwrap_or_default()
                .to_owned(),
        };
        let peer = parts.extensions.get::<Peer>().copied();
        Ok(Ctx {
            base: base_of(parts.uri.path()),
            admin: Admin::new(state.operations.clone(), token, peer, &parts.headers),
            csrf,
            browser: parts.headers.clone(),
            htmx: parts.headers.contains_key("hx-request"),
            now: (state.clock)(),
            done: parts.uri.query().and_then(|query| {
                let key = form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == "done")?
                    .1;
                NOTICES
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, message)| *message)
            }),
        })
    }
}

/// The signed-in operator as a page needs it.
pub struct Operator {
    pub email: String,
    pub role: String,
    may: HashSet<String>,
}

impl Operator {
    /// Whether the operator may use the admin API's operation `id`: a button for it is shown.
    pub fn may(&self, id: &str) -> bool {
        self.may.contains(id)
    }
}

/// The frame of a page: what the layout reads.
pub struct Page {
    pub base: String,
    pub csrf: String,
    pub assets: AssetPaths,
    pub title: String,
    /// The top navigation's current entry.
    pub section: &'static str,
    pub operator: Option<Operator>,
    /// A message carried over a redirect (`?done=`), shown once at the top.
    pub notice: Option<String>,
    /// The organisation a page is in, with its campaigns: the second navigation.
    pub org: Option<OrgFrame>,
}

/// The organisation a page is in.
pub struct OrgFrame {
    pub id: String,
    pub name: String,
    pub campaigns: Vec<CampaignView>,
    /// The second navigation's current entry.
    pub section: &'static str,
}

impl OrgFrame {
    /// The campaign a page shows: the one `asked` names if it is the organisation's, else its
    /// first (none: ""), with its currency.
    pub fn chosen(&self, asked: Option<&String>) -> (String, String) {
        let campaign = asked
            .filter(|c| self.campaigns.iter().any(|k| &k.id == *c))
            .or(self.campaigns.first().map(|c| &c.id))
            .cloned()
            .unwrap_or_default();
        let currency = self.currency(&campaign).to_owned();
        (campaign, currency)
    }

    /// The campaign `id`'s currency (for amounts), or nothing.
    pub fn currency(&self, campaign: &str) -> &str {
        self.campaigns
            .iter()
            .find(|c| c.id == campaign)
            .map_or("", |c| c.currency.as_str())
    }
}

impl Page {
    pub fn may(&self, id: &str) -> bool {
        self.operator.as_ref().is_some_and(|o| o.may(id))
    }
}

impl Ctx {
    /// A page for the signed-in operator (asked of the API, so that a session that ended sends
    /// the browser to sign in).
    pub async fn page(
        &self,
        title: impl Into<String>,
        section: &'static str,
    ) -> Result<Page, Failure> {
        let me: Me = self.admin.get("/admin/v1/me").await?;
        Ok(Page {
            operator: Some(Operator {
                email: me.operator.email,
                role: me.operator.role,
                may: me.operations.into_iter().collect(),
            }),
            ..self.bare(title, section)
        })
    }

    /// A page for no one signed in (sign-in, errors).
    pub fn bare(&self, title: impl Into<String>, section: &'static str) -> Page {
        Page {
            base: self.base.clone(),
            csrf: self.csrf.clone(),
            assets: paths(),
            title: title.into(),
            section,
            operator: None,
            notice: self.done.map(str::to_owned),
            org: None,
        }
    }

    /// A page inside organisation `org` (which the operator must reach: another answers 404).
    pub async fn org_page(
        &self,
        org: &str,
        title: impl Into<String>,
        section: &'static str,
    ) -> Result<Page, Failure> {
        let mut page = self.page(title, "orgs").await?;
        let path = format!("/admin/v1/orgs/{}", enc(org));
        let view: OrgView = self.admin.get(&path).await?;
        let campaigns: PagedList<CampaignView> = self
            .admin
            .get(&format!("{path}/campaigns?limit=100"))
            .await?;
        page.org = Some(OrgFrame {
            id: view.id,
            name: view.name,
            campaigns: campaigns.data,
            section,
        });
        Ok(page)
    }
}

/// A template rendered as the answer. A form shown again with what was wrong with it is a page
/// like any other (200): a browser logs an error for a page answered with 4xx.
pub fn render(template: &impl Template) -> Response {
    render_with(StatusCode::OK, template)
}

pub fn render_with(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(err) => {
            Failure::Problem(Problem::internal(format!("a page's template: {err}"))).into_response()
        }
    }
}

/// Why a page is not shown: the browser is sent elsewhere, or a page says what went wrong.
#[derive(Debug, Clone)]
pub enum Failure {
    /// To this path under the console's root.
    Redirect(String),
    Problem(Problem),
}

impl From<Problem> for Failure {
    fn from(problem: Problem) -> Failure {
        match (problem.status, problem.code.as_str()) {
            (401, _) => Failure::Redirect("sign-in".into()),
            (403, "password_change_required") => Failure::Redirect("account/password".into()),
            (403, "two_factor_required") => Failure::Redirect("account/two-factor".into()),
            _ => Failure::Problem(problem),
        }
    }
}

/// A form's fields as sent, a name possibly repeated (check boxes).
pub struct Fields(Vec<(String, String)>);

impl Fields {
    pub fn of(body: &[u8]) -> Fields {
        Fields(form_urlencoded::parse(body).into_owned().collect())
    }

    /// The first value of `name`, trimmed, or "".
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.trim())
    }

    /// The first value of `name` as sent (a text area's), or "".
    pub fn get_raw(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Whether a check box `name` was ticked.
    pub fn ticked(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }
}

/// Whether a refusal is about what a form said (shown beside it), not about the page.
pub fn form_problem(problem: &Problem) -> bool {
    (400..500).contains(&problem.status)
        && !matches!(problem.status, 401 | 404)
        && problem.code != "not_permitted"
}

/// A page that does not exist.
pub fn not_found() -> Failure {
    Failure::Problem(Problem {
        status: 404,
        code: "not_found".into(),
        detail: "There is no such page.".into(),
        ..Problem::default()
    })
}

/// A redirect to a path under the console's root, after a form was sent. Its `done` key must
/// be one of `NOTICES` (checked in debug builds, so the tests find one that is not).
pub fn to(path: impl Into<String>) -> Failure {
    let path = path.into();
    if let Some((_, query)) = path.split_once('?') {
        for (name, key) in form_urlencoded::parse(query.as_bytes()) {
            debug_assert!(
                name != "done" || NOTICES.iter().any(|(k, _)| *k == key),
                "no notice says `{key}`"
            );
        }
    }
    Failure::Redirect(path)
}

impl IntoResponse for Failure {
    /// An empty answer carrying the failure: `show_failures` makes the page, knowing the
    /// request's path.
    fn into_response(self) -> Response {
        let status = match &self {
            Failure::Redirect(_) => StatusCode::SEE_OTHER,
            Failure::Problem(problem) => {
                StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
        };
        let mut response = status.into_response();
        response.extensions_mut().insert(self);
        response
    }
}

#[derive(Template)]
#[template(path = "failure.html")]
struct FailurePage {
    page: Page,
    heading: &'static str,
    detail: String,
}

/// Turns a `Failure` into its page or its redirect: `Location` relative to the request (or
/// `HX-Redirect` relative to the page's base, for htmx).
pub async fn show_failures(request: Request, next: Next) -> Response {
    let base = base_of(request.uri().path());
    let htmx = request.headers().contains_key("hx-request");
    let csrf = cookie(request.headers(), SESSION_COOKIE)
        .map(csrf_of)
        .unwrap_or_default();
    let mut response = next.run(request).await;
    let Some(failure) = response.extensions_mut().remove::<Failure>() else {
        return response;
    };
    match failure {
        Failure::Redirect(path) => {
            // The answer keeps its other headers (the cookies of signing in or out).
            let (name, value, status) = if htmx {
                ("hx-redirect", path, StatusCode::OK)
            } else {
                ("location", format!("{base}{path}"), StatusCode::SEE_OTHER)
            };
            *response.status_mut() = status;
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
            response
        }
        Failure::Problem(problem) => {
            if problem.status >= 500 {
                tracing::error!(code = %problem.code, detail = %problem.detail, "a console page failed");
            }
            let heading = match problem.status {
                403 => "Not permitted",
                404 => "Not found",
                409 => "Not done",
                429 => "Too many attempts",
                400..=499 => "Not accepted",
                _ => "Something went wrong",
            };
            let page = FailurePage {
                page: Page {
                    base,
                    csrf,
                    assets: paths(),
                    title: heading.to_owned(),
                    section: "",
                    operator: None,
                    notice: None,
                    org: None,
                },
                heading,
                detail: problem.detail,
            };
            let mut shown = render_with(response.status(), &page);
            shown
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            shown
        }
    }
}

/// A `Content-Disposition` saying the answer is a file named `name` to save (characters a
/// header may not hold, and quotes, become `_`).
pub fn attachment(name: &str) -> HeaderValue {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' {
                c
            } else {
                '_'
            }
        })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{safe}\""))
        .unwrap_or(HeaderValue::from_static("attachment"))
}
