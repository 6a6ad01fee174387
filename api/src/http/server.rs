//! The HTTP server's connection loop (HTTP/1.1, as `axum::serve` speaks it), with the limits a
//! public service needs and `axum::serve` does not set: a client has `header_timeout` to send a
//! request's head (a half-open, idle or dribbling connection is closed, not kept); at most
//! `max_connections` are served at once (more wait in the listener's backlog); and a stop lets
//! requests in flight finish for `grace` at most, then closes what is left, whatever clients do.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
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
                Ok((stream, _)) => stream,
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
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stopped = stopped.clone();
        connections.spawn(async move {
            let _permit = permit;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service);
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
