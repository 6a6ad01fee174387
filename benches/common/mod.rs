//! What the HTTP benchmarks share: a load driver with latency percentiles.

#![allow(dead_code)] // each benchmark uses its own part

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Requests per second and latency percentiles of one scenario.
pub struct Load {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub count: usize,
}

impl Load {
    pub fn row(&self, name: &str) -> String {
        format!(
            "{name:<34} {:>10.0} {:>9.2} {:>9.2}",
            self.rate, self.p50_ms, self.p99_ms
        )
    }
}

pub const HEADER: &str = "scenario                                req/s    p50 ms    p99 ms";

/// Runs `request(client_index, sequence)` from `clients` concurrent loops for `seconds`.
/// Each call must send one request and panic on an unexpected answer.
pub async fn drive<F, Fut>(clients: usize, seconds: u64, request: F) -> Load
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let request = Arc::new(request);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut sequence = 0;
            while Instant::now() < deadline {
                let sent = Instant::now();
                request(client, sequence).await;
                latencies.push(sent.elapsed());
                sequence += 1;
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("client task"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    Load {
        rate: latencies.len() as f64 / elapsed,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        count: latencies.len(),
    }
}

/// Latency percentiles (ms) of a list of durations.
pub fn percentiles(mut durations: Vec<Duration>) -> (f64, f64) {
    durations.sort();
    let at = |q: f64| durations[((durations.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.99))
}
