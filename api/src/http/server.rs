//! The HTTP server's connection loop (HTTP/1.1, as `axum::serve` speaks it), with the limits a
//! public service needs and `axum::serve` does not set: a client has `header_timeout` to send a
//! request's head (a half-open, idle or dribbling connection is closed, not kept); at most
//! `max_connections` are served at once (more wait in the listener's backlog); and a stop lets
//! requests in flight finish for `grace` at most, then closes what is left, whatever clients do.
//! A request hyper cannot read at all (not HTTP, a URI past 65,534 bytes, a head past its
//! buffer) is answered by hyper itself, without a body; `Unparsed` makes that answer a problem
//! like every other.

use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// The HTTP server's limits (`http_header_timeout_secs`, `http_max_connections`,
/// `http_shutdown_grace_secs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub header_timeout: Duration,
    pub max_connections: usize,
    pub grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            max_connections: 4_096,
            grace: Duration::from_secs(20),
        }
    }
}

/// The address a request's connection comes from (the proxy's, behind one), in every request's
/// extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub std::net::SocketAddr);

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting, lets the
/// requests in flight finish within `limits.grace` and closes every connection still open.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop, stopped) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, a connection reset before it was taken...: the
                    // listener itself is fine; a short pause keeps an error from spinning.
                    tracing::warn!(%err, "a connection could not be accepted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = stream;
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(tower::ServiceExt::map_request(
            app.clone(),
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(Peer(peer));
                request
            },
        ));
        let mut stopped = stopped.clone();
        connections.spawn(async move {
            let _permit = permit;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(Unparsed::new(stream)), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stopped.wait_for(|stop| *stop) => {}
            }
            // Idle connections close now; one with a request in flight after its answer.
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = stop.send(true);
    let drained = tokio::time::timeout(limits.grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = connections.len(),
            grace_secs = limits.grace.as_secs(),
            "connections still open after the stop's grace period: closed"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// A connection's stream that replaces hyper's own answer to a request it could not parse (a
/// 400, 414 or 431 head with no body, after which hyper closes the connection) with the same
/// status as a problem. The application never answers those statuses without a body, so no
/// answer of its own is touched.
struct Unparsed<S> {
    inner: S,
    /// The replacement answer, and how much of it is written.
    pending: Vec<u8>,
    sent: usize,
    /// After a replaced answer, until when what the client still sends is read and dropped
    /// before the connection closes: closing on unread bytes would reset the connection, and
    /// the client could lose the answer.
    linger: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// How long, and how many bytes, a refused request's remains are read before closing.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 4 << 20;

impl<S> Unparsed<S> {
    fn new(inner: S) -> Self {
        Unparsed {
            inner,
            pending: Vec::new(),
            sent: 0,
            linger: None,
        }
    }
}

impl<S: AsyncWrite + Unpin> Unparsed<S> {
    /// Writes what is left of the replacement.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        Poll::Ready(Ok(()))
    }

    /// Takes `head` in place of hyper's answer if it is one; then `head` counts as written.
    fn replaced(
        &mut self,
        cx: &mut Context<'_>,
        head: &[u8],
    ) -> Option<Poll<std::io::Result<usize>>> {
        self.pending = automatic_answer(head)?;
        self.sent = 0;
        Some(match self.poll_pending(cx) {
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            // What is not written yet goes with the flush that follows.
            _ => Poll::Ready(Ok(head.len())),
        })
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Unparsed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Unparsed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(answer) = self.replaced(cx, buf) {
            return answer;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(first) = bufs.iter().find(|b| !b.is_empty())
            && let Some(answer) = self.replaced(cx, first)
        {
            return answer;
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        ready!(Pin::new(&mut self.inner).poll_shutdown(cx))?;
        if self.pending.is_empty() {
            return Poll::Ready(Ok(()));
        }
        // The answer was ours: read what the client still sends, for a while.
        let this = &mut *self;
        let linger = this
            .linger
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(LINGER)));
        let mut drained = 0;
        let mut scratch = [0u8; 16 << 10];
        while drained < LINGER_BYTES && linger.as_mut().poll(cx).is_pending() {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => drained += buf.filled().len(),
                Poll::Pending => return Poll::Pending,
                // The client closed too, or the connection failed: done.
                Poll::Ready(_) => break,
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// The problem answer standing for `head`, if `head` is the whole of hyper's own answer to a
/// request it could not parse.
fn automatic_answer(head: &[u8]) -> Option<Vec<u8>> {
    let (status, code, detail) = match head.get(..13)? {
        b"HTTP/1.1 400 " => (
            400,
            "bad_request",
            "the request is not HTTP/1.1 that can be read",
        ),
        b"HTTP/1.1 414 " => (
            414,
            "uri_too_long",
            "the request's URI is longer than 65,534 bytes",
        ),
        b"HTTP/1.1 431 " => (
            431,
            "headers_too_large",
            "the request's head is larger than the service accepts",
        ),
        _ => return None,
    };
    let text = std::str::from_utf8(head).ok()?.to_ascii_lowercase();
    let bare = text.ends_with("\r\n\r\n")
        && text.matches("\r\n\r\n").count() == 1
        && text.contains("\r\ncontent-length: 0\r\n")
        && !text.contains("\r\ncontent-type:");
    if !bare {
        return None;
    }
    let status = axum::http::StatusCode::from_u16(status).ok()?;
    let problem = crate::http::error::Problem {
        kind: format!("urn:problem-type:rewards:{code}"),
        title: status.canonical_reason().unwrap_or("Error").to_string(),
        status: status.as_u16(),
        detail: detail.to_string(),
        code: code.to_string(),
        field: None,
        errors: Vec::new(),
    };
    let body = serde_json::to_vec(&problem).ok()?;
    let mut answer = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        status.as_u16(),
        problem.title,
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::automatic_answer;

    #[test]
    fn only_hyper_s_bodiless_answers_are_replaced() {
        let hyper = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Fri, 27 Nov 2026 10:00:00 GMT\r\n\r\n";
        let answer = String::from_utf8(automatic_answer(hyper).unwrap()).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 414 URI Too Long\r\n"),
            "{answer}"
        );
        assert!(answer.contains("content-type: application/problem+json"));
        assert!(answer.ends_with(r#""code":"uri_too_long"}"#), "{answer}");
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\ncontent-length: 2\r\n\r\n";
        assert_eq!(automatic_answer(ours), None);
        let with_body =
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
        assert_eq!(automatic_answer(with_body), None);
        assert_eq!(
            automatic_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"),
            None
        );
    }
}
