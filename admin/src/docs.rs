//! The admin API's OpenAPI 3.1 document (at the admin listener's `/openapi.json`) and its
//! `/docs` page.

use utoipa::Modify;
use utoipa::openapi::OpenApi;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};

use api::plumbing::Problem;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Rewards admin",
        description = "The operators' API. Sign in with `POST /admin/v1/sessions` and send the \
            session's token (or an automation token) as `Authorization: Bearer <token>`. What \
            each role may use is in docs/operators.md; `GET /admin/v1/me` lists the operations \
            the caller may use. Errors are RFC 9457 problem details with a stable `code`."
    ),
    components(schemas(Problem)),
    modifiers(&Bearer)
)]
struct AdminDoc;

pub fn base() -> OpenApi {
    <AdminDoc as utoipa::OpenApi>::openapi()
}

/// The bearer token every operation but signing in needs.
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, api: &mut OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
        api.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
    }
}

/// The answers every operation shares, and every error answer spoken as problem details.
pub fn add_shared_parts(api: &mut OpenApi) {
    let signed_in = [
        ("400", "a parameter or the body is invalid"),
        ("401", "no token, or one that is wrong, expired or revoked"),
        (
            "403",
            "the caller's role or token may not use this operation, or must first change its \
             password or enrol a second factor",
        ),
    ];
    let admin = |path: &str| path.starts_with("/admin");
    api::plumbing::add_problem_answers(
        api,
        admin,
        &signed_in,
        api::plumbing::no_control_characters,
    );
}

pub fn swagger_config() -> utoipa_swagger_ui::Config<'static> {
    utoipa_swagger_ui::Config::new(["../openapi.json"]).validator_url("none")
}
