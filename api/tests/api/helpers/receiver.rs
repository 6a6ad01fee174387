//! A webhook receiver for tests: a real HTTP server on a random port that keeps every delivery
//! it is sent, checks its Standard Webhooks signature against the secret it is given, and
//! answers as its script says (204 once the script runs out).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::sync::watch;

/// How the receiver answers one delivery.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    Status(u16),
    /// A 302 to another address (which must not be followed).
    Redirect,
    /// Never answers (the sender's timeout must end the attempt).
    Hang,
}

/// One delivery as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub body: Value,
    /// Whether the signature verified with the receiver's secret at arrival.
    pub verified: bool,
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Answer>,
    /// How it answers once the script runs out (204 when `None`).
    otherwise: Option<Answer>,
    secret: Option<String>,
    received: Vec<Received>,
    /// Requests being answered now, and the most at once so far.
    open: usize,
    most_open: usize,
}

/// One request being answered: counted open until its answer is sent or its sender gives up.
struct Open(Arc<Mutex<Inner>>);

impl Drop for Open {
    fn drop(&mut self) {
        let mut inner = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.open -= 1;
    }
}

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    count: watch::Receiver<usize>,
}

impl Receiver {
    /// A receiver at `http://127.0.0.1:PORT/hook`.
    pub async fn start() -> Receiver {
        let inner: Arc<Mutex<Inner>> = Arc::default();
        let (count_tx, count) = watch::channel(0usize);
        let state = (inner.clone(), Arc::new(count_tx));
        let app = Router::new()
            .route("/hook", post(receive))
            .route("/elsewhere", post(|| async { StatusCode::NO_CONTENT }))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url, inner, count }
    }

    /// Checks signatures with `secret` from now on.
    pub fn verify_with(&self, secret: &str) {
        self.inner.lock().unwrap().secret = Some(secret.to_string());
    }

    /// Answers the next deliveries with `answers`, in order.
    pub fn script(&self, answers: &[Answer]) {
        self.inner.lock().unwrap().script.extend(answers);
    }

    /// Answers `answer` to every delivery once the script runs out.
    pub fn otherwise(&self, answer: Answer) {
        self.inner.lock().unwrap().otherwise = Some(answer);
    }

    /// The most requests it was answering at once.
    pub fn most_open(&self) -> usize {
        self.inner.lock().unwrap().most_open
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// Waits until `n` deliveries have arrived (at most `within`); every one received.
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let mut count = self.count.clone();
        let waited = tokio::time::timeout(within, count.wait_for(|c| *c >= n)).await;
        let received = self.received();
        assert!(
            waited.is_ok(),
            "{} of {n} deliveries within {within:?}: {received:?}",
            received.len()
        );
        received
    }
}

type Shared = (Arc<Mutex<Inner>>, Arc<watch::Sender<usize>>);

async fn receive(
    axum::extract::State((inner, count)): axum::extract::State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (id, signature) = (text("webhook-id"), text("webhook-signature"));
    let timestamp: i64 = text("webhook-timestamp").parse().unwrap_or_default();
    let answer = {
        let mut inner = inner.lock().unwrap();
        let verified = inner.secret.as_deref().is_some_and(|secret| {
            let now = chrono::Utc::now().timestamp();
            outbound::signature::verify(secret, &id, timestamp, &body, &signature, now)
        });
        inner.received.push(Received {
            id,
            timestamp,
            signature,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            verified,
        });
        count.send_replace(inner.received.len());
        inner.open += 1;
        inner.most_open = inner.most_open.max(inner.open);
        inner.script.pop_front().or(inner.otherwise)
    };
    let _open = Open(inner.clone());
    match answer {
        None => StatusCode::NO_CONTENT.into_response(),
        Some(Answer::Status(code)) => {
            (StatusCode::from_u16(code).unwrap(), "an answer").into_response()
        }
        Some(Answer::Redirect) => Redirect::to("/elsewhere").into_response(),
        Some(Answer::Hang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::NO_CONTENT.into_response()
        }
    }
}
