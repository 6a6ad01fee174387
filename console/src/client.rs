//! The admin API called in process: each console action is one or more of its operations, sent
//! through the same router and gate as a request from outside, with the operator's session
//! token and the browser's address, user agent and request id (so the audit trail reads the
//! same), and answered as the API answers.

use api::plumbing::Peer;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::ServiceExt;

/// A refusal as the API's problem body says it.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    #[serde(skip)]
    pub status: u16,
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub field: Option<String>,
    /// Every field at fault, for a form with several.
    #[serde(default)]
    pub errors: Vec<FieldMessage>,
    /// `Retry-After` (seconds), where the API sent it.
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

impl Problem {
    pub fn internal(detail: impl Into<String>) -> Problem {
        Problem {
            status: 500,
            code: "internal".into(),
            detail: detail.into(),
            ..Problem::default()
        }
    }

    /// The message for the form field `name`, if the problem names it.
    pub fn about(&self, name: &str) -> Option<&str> {
        match self.errors.iter().find(|e| e.field == name) {
            Some(error) => Some(error.message.as_str()),
            None => (self.field.as_deref() == Some(name)).then_some(self.detail.as_str()),
        }
    }

    /// The message of a problem that names no field of the form (`fields`), if any.
    pub fn general(&self, fields: &[&str]) -> Option<&str> {
        let named = fields.iter().any(|f| self.about(f).is_some());
        (!named).then_some(self.detail.as_str())
    }
}

/// One field at fault.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct FieldMessage {
    pub field: String,
    pub message: String,
}

/// An answer of the API: its status, headers and body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The admin API as one operator's browser session reaches it.
#[derive(Clone)]
pub struct Admin {
    operations: Router,
    token: Option<String>,
    /// The browser's request: where it came from, what it is, its id.
    peer: Option<Peer>,
    forwarded: HeaderMap,
}

impl Admin {
    pub fn new(
        operations: Router,
        token: Option<String>,
        peer: Option<Peer>,
        browser: &HeaderMap,
    ) -> Admin {
        let mut forwarded = HeaderMap::new();
        for name in [header::USER_AGENT.as_str(), "x-request-id"] {
            if let Some(value) = browser.get(name) {
                forwarded.insert(
                    name.parse::<header::HeaderName>().expect("a header name"),
                    value.clone(),
                );
            }
        }
        Admin {
            operations,
            token,
            peer,
            forwarded,
        }
    }

    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// This client with no session (to sign in).
    pub fn without_token(mut self) -> Admin {
        self.token = None;
        self
    }

    /// `GET path` answered as the API answers it, its body streamed (a download), with the
    /// browser's `Range` passed on; a refusal as a `Problem`.
    pub async fn pass_through(
        &self,
        path: &str,
        browser: &HeaderMap,
    ) -> Result<axum::response::Response, Problem> {
        let mut request = self.request(Method::GET, path, None, Body::empty())?;
        for name in [header::RANGE, header::IF_RANGE] {
            if let Some(value) = browser.get(&name) {
                request.headers_mut().insert(name, value.clone());
            }
        }
        let response = self
            .operations
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| Problem::internal(e.to_string()))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| Problem::internal(e.to_string()))?
            .to_bytes();
        Err(refusal(&Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        }))
    }

    /// A request to the API as this client sends it.
    fn request(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Body,
    ) -> Result<Request<Body>, Problem> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .body(body)
            .map_err(|e| Problem::internal(format!("a request to {path}: {e}")))?;
        let headers = request.headers_mut();
        headers.extend(self.forwarded.clone());
        if let Some(token) = &self.token {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| Problem::internal("a session token that is not a header value"))?;
            headers.insert(header::AUTHORIZATION, value);
        }
        if let Some(content_type) = content_type {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_str(content_type)
                    .map_err(|_| Problem::internal("a content type"))?,
            );
        }
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(peer);
        }
        Ok(request)
    }

    /// Sends one request and reads the whole answer.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Body,
    ) -> Result<Answer, Problem> {
        let request = self.request(method, path, content_type, body)?;
        let response = self
            .operations
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| Problem::internal(e.to_string()))?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| Problem::internal(e.to_string()))?
            .to_bytes();
        let answer = Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        };
        if answer.status.is_success() {
            Ok(answer)
        } else {
            Err(refusal(&answer))
        }
    }

    /// `GET path`, its JSON read as `T`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Problem> {
        let answer = self.call(Method::GET, path, None, Body::empty()).await?;
        read(&answer.body)
    }

    /// `method path` with a JSON body, the answer's JSON read as `T` (`()` for none).
    pub async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, Problem> {
        let body = serde_json::to_vec(body).map_err(|e| Problem::internal(e.to_string()))?;
        let answer = self
            .call(method, path, Some("application/json"), Body::from(body))
            .await?;
        read(&answer.body)
    }

    /// `method path` with no body, the answer's JSON read as `T` (`()` for none).
    pub async fn act<T: DeserializeOwned>(&self, method: Method, path: &str) -> Result<T, Problem> {
        let answer = self.call(method, path, None, Body::empty()).await?;
        read(&answer.body)
    }
}

fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    let body = if body.is_empty() {
        b"null".as_slice()
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| Problem::internal(format!("the API's answer: {e}")))
}

fn refusal(answer: &Answer) -> Problem {
    let mut problem: Problem = serde_json::from_slice(&answer.body).unwrap_or_else(|_| Problem {
        code: "unexpected".into(),
        detail: String::from_utf8_lossy(&answer.body)
            .chars()
            .take(300)
            .collect(),
        ..Problem::default()
    });
    problem.status = answer.status.as_u16();
    problem.retry_after = answer
        .headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    problem
}

/// A path segment or query value, percent-encoded.
pub fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char);
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
