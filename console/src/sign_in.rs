//! Signing in (password, then the authenticator's code or a recovery code), signing out, and
//! what a first sign-in demands: a new password, and a second factor where it is required.

use admin::views_of::{EnrolmentView, RecoveryCodesView, SignedIn};
use askama::Template;
use axum::Form;
use axum::http::Method;
use axum::http::header::SET_COOKIE;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::client::Problem;
use crate::page::{Ctx, Failure, Page, form_problem, render, to};
use crate::security::{SESSION_COOKIE, SIGN_IN_COOKIE, random_token, set_cookie};

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage {
    page: Page,
    email: String,
    problem: Option<Problem>,
}

impl SignInPage {
    /// The message that concerns no one field.
    fn general(&self) -> Option<String> {
        let problem = self.problem.as_ref()?;
        if problem.field.is_some() {
            return None;
        }
        Some(match (problem.status, problem.retry_after) {
            (429, Some(seconds)) => format!(
                "Too many failed sign-ins: signing in is locked. Try again in {} minute{}.",
                seconds.div_ceil(60),
                if seconds.div_ceil(60) == 1 { "" } else { "s" }
            ),
            (401, _) if problem.code == "wrong_credentials" => {
                "The e-mail or password is not right.".to_owned()
            }
            _ => problem.detail.clone(),
        })
    }

    fn about(&self, field: &str) -> Option<String> {
        let problem = self.problem.as_ref()?;
        let second_factor = field == "secondFactor";
        match problem.code.as_str() {
            "second_factor_required" if second_factor => {
                Some("Enter the 6-digit code from your authenticator app (or a recovery code), and your password again.".into())
            }
            "wrong_second_factor" if second_factor => {
                Some("That code is not right, or was used already. Enter your password and a new code.".into())
            }
            _ => problem.about(field).map(str::to_owned),
        }
    }
}

/// `GET /console/sign-in`.
pub async fn form(ctx: Ctx) -> Response {
    let mut page = ctx.bare("Sign in", "");
    let mut cookie = None;
    if page.csrf.is_empty() {
        page.csrf = random_token();
        cookie = Some(set_cookie(&ctx.browser, SIGN_IN_COOKIE, Some(&page.csrf)));
    }
    let mut response = render(&SignInPage {
        page,
        email: String::new(),
        problem: None,
    });
    if let Some(cookie) = cookie {
        response.headers_mut().append(SET_COOKIE, cookie);
    }
    response
}

#[derive(Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    code: String,
}

/// `POST /console/sign-in`.
pub async fn sign_in(ctx: Ctx, Form(form): Form<SignInForm>) -> Response {
    let code = form.code.trim();
    let body = json!({
        "email": form.email.trim(),
        "password": form.password,
        "secondFactor": (!code.is_empty()).then_some(code),
    });
    let anonymous = ctx.admin.clone().without_token();
    match anonymous
        .send::<SignedIn>(Method::POST, "/admin/v1/sessions", &body)
        .await
    {
        Ok(signed_in) => {
            let next = if signed_in.must_change_password {
                "account/password"
            } else if signed_in.must_enrol_two_factor {
                "account/two-factor"
            } else {
                ""
            };
            let mut response = to(next).into_response();
            let headers = response.headers_mut();
            headers.append(
                SET_COOKIE,
                set_cookie(&ctx.browser, SESSION_COOKIE, Some(&signed_in.token)),
            );
            headers.append(SET_COOKIE, set_cookie(&ctx.browser, SIGN_IN_COOKIE, None));
            response
        }
        Err(problem) => render(&SignInPage {
            page: ctx.bare("Sign in", ""),
            email: form.email,
            problem: Some(problem),
        }),
    }
}

/// `POST /console/sign-out`: the session ends and its cookie is cleared.
pub async fn sign_out(ctx: Ctx) -> Response {
    if ctx.admin.token().is_some() {
        // A session that already ended is signed out as well.
        let _ = ctx
            .admin
            .act::<()>(Method::DELETE, "/admin/v1/sessions/current")
            .await;
    }
    let mut response = to("sign-in").into_response();
    response
        .headers_mut()
        .append(SET_COOKIE, set_cookie(&ctx.browser, SESSION_COOKIE, None));
    response
}

#[derive(Template)]
#[template(path = "password.html")]
struct PasswordPage {
    page: Page,
    problem: Option<Problem>,
    one_time: bool,
}

/// `GET /console/account/password`.
pub async fn password_form(ctx: Ctx) -> Result<Response, Failure> {
    let page = ctx.page("Change your password", "account").await?;
    let one_time = ctx
        .admin
        .get::<admin::views_of::Me>("/admin/v1/me")
        .await?
        .operator
        .must_change_password;
    Ok(render(&PasswordPage {
        page,
        problem: None,
        one_time,
    }))
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    again: String,
}

/// `POST /console/account/password`.
pub async fn change_password(
    ctx: Ctx,
    Form(form): Form<PasswordForm>,
) -> Result<Response, Failure> {
    let problem = if form.new == form.again {
        let body = json!({"currentPassword": form.current, "newPassword": form.new});
        match ctx
            .admin
            .send::<serde_json::Value>(Method::PUT, "/admin/v1/me/password", &body)
            .await
        {
            Ok(_) => {
                let me: admin::views_of::Me = ctx.admin.get("/admin/v1/me").await?;
                let next = if me.two_factor_required && !me.operator.two_factor {
                    "account/two-factor"
                } else {
                    "account?done=password"
                };
                return Ok(to(next).into_response());
            }
            Err(problem) if form_problem(&problem) => problem,
            Err(problem) => return Err(problem.into()),
        }
    } else {
        Problem {
            status: 400,
            code: "mismatch".into(),
            field: Some("again".into()),
            detail: "the two new passwords differ".into(),
            ..Problem::default()
        }
    };
    let page = ctx.page("Change your password", "account").await?;
    Ok(render(&PasswordPage {
        page,
        problem: Some(problem),
        one_time: false,
    }))
}

#[derive(Template)]
#[template(path = "two_factor.html")]
struct TwoFactorPage {
    page: Page,
    on: bool,
    required: bool,
    /// While enrolling: the secret, and its QR code as SVG.
    enrolment: Option<(EnrolmentView, String)>,
    recovery_codes: Vec<String>,
    problem: Option<Problem>,
}

/// `GET /console/account/two-factor`.
pub async fn two_factor(ctx: Ctx) -> Result<Response, Failure> {
    let page = ctx.page("Two-step sign-in", "account").await?;
    let me: admin::views_of::Me = ctx.admin.get("/admin/v1/me").await?;
    Ok(render(&TwoFactorPage {
        page,
        on: me.operator.two_factor,
        required: me.two_factor_required,
        enrolment: None,
        recovery_codes: Vec::new(),
        problem: None,
    }))
}

/// `POST /console/account/two-factor`: a new secret, shown as a QR code to scan.
pub async fn begin_two_factor(ctx: Ctx) -> Result<Response, Failure> {
    let enrolment: EnrolmentView = ctx
        .admin
        .act(Method::POST, "/admin/v1/me/two-factor")
        .await?;
    let page = ctx.page("Two-step sign-in", "account").await?;
    let qr = qr_svg(&enrolment.uri)?;
    Ok(render(&TwoFactorPage {
        page,
        on: false,
        required: false,
        enrolment: Some((enrolment, qr)),
        recovery_codes: Vec::new(),
        problem: None,
    }))
}

#[derive(Deserialize)]
pub struct ConfirmForm {
    #[serde(default)]
    code: String,
    /// The secret being confirmed, shown again if the code is wrong.
    #[serde(default)]
    secret: String,
    #[serde(default)]
    uri: String,
}

/// `POST /console/account/two-factor/confirm`: on with a first code; the recovery codes shown
/// once.
pub async fn confirm_two_factor(
    ctx: Ctx,
    Form(form): Form<ConfirmForm>,
) -> Result<Response, Failure> {
    let body = json!({"code": form.code.trim()});
    let answer = ctx
        .admin
        .send::<RecoveryCodesView>(Method::POST, "/admin/v1/me/two-factor/confirm", &body)
        .await;
    let page = ctx.page("Two-step sign-in", "account").await?;
    match answer {
        Ok(codes) => Ok(render(&TwoFactorPage {
            page,
            on: true,
            required: false,
            enrolment: None,
            recovery_codes: codes.recovery_codes,
            problem: None,
        })),
        Err(problem) if problem.status == 400 || problem.field.as_deref() == Some("code") => {
            let qr = qr_svg(&form.uri)?;
            let enrolment = EnrolmentView {
                secret: form.secret,
                uri: form.uri,
            };
            Ok(render(&TwoFactorPage {
                page,
                on: false,
                required: false,
                enrolment: Some((enrolment, qr)),
                recovery_codes: Vec::new(),
                problem: Some(Problem {
                    field: Some("code".into()),
                    ..problem
                }),
            }))
        }
        Err(problem) => Err(problem.into()),
    }
}

/// An `otpauth://` URI as a QR code, in SVG drawn here (no image is fetched from anywhere).
fn qr_svg(uri: &str) -> Result<String, Failure> {
    let code = qrcode::QrCode::new(uri.as_bytes())
        .map_err(|e| Problem::internal(format!("a QR code: {e}")))?;
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(220, 220)
        .quiet_zone(true)
        .build();
    // The XML declaration has no place inside an HTML page.
    Ok(match svg.find("<svg") {
        Some(at) => svg[at..].to_owned(),
        None => svg,
    })
}
