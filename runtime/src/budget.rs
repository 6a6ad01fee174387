//! What webhook deliveries may use of a node: at most `sockets` attempts open at once over all
//! endpoints and organisations, of which one organisation's endpoints take at most `org_sockets`
//! (so a tenant whose receivers hang waits on its own share, and the others' deliveries and the
//! HTTP listener keep theirs); and, per endpoint, how many attempts it is given at once, halved
//! after a round in which a receiver did not answer and doubled back after one in which every
//! attempt was answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use store::AttemptOutcome;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The node's sockets for deliveries, and each organisation's share of them.
pub(crate) struct Budget {
    node: Arc<Semaphore>,
    org_sockets: usize,
    orgs: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// Sockets held for one round: released when dropped.
pub(crate) struct Sockets {
    pub count: usize,
    _org: OwnedSemaphorePermit,
    _node: OwnedSemaphorePermit,
}

impl Budget {
    pub(crate) fn new(sockets: usize, org_sockets: usize) -> Budget {
        let sockets = sockets.max(1);
        Budget {
            node: Arc::new(Semaphore::new(sockets)),
            org_sockets: org_sockets.clamp(1, sockets),
            orgs: Mutex::default(),
        }
    }

    /// Up to `want` sockets for an endpoint of `org`: waits for the first (its organisation's
    /// share first, so that waiting holds none of the node's), then takes what is free now.
    pub(crate) async fn sockets(&self, org: &str, want: usize) -> Sockets {
        let share = self.share(org);
        let mut org_permit = share
            .clone()
            .acquire_owned()
            .await
            .expect("the budget's semaphores are never closed");
        let mut node_permit = self
            .node
            .clone()
            .acquire_owned()
            .await
            .expect("the budget's semaphores are never closed");
        let mut count = 1;
        while count < want {
            let Ok(more_org) = share.clone().try_acquire_owned() else {
                break;
            };
            let Ok(more_node) = self.node.clone().try_acquire_owned() else {
                break;
            };
            org_permit.merge(more_org);
            node_permit.merge(more_node);
            count += 1;
        }
        Sockets {
            count,
            _org: org_permit,
            _node: node_permit,
        }
    }

    /// How many endpoints of one organisation may send at once: each needs a socket.
    pub(crate) fn org_sockets(&self) -> usize {
        self.org_sockets
    }

    /// The most one endpoint takes at once: half its organisation's share (at least one), so
    /// that a hanging receiver leaves its organisation's other endpoints sockets too.
    pub(crate) fn per_endpoint(&self) -> usize {
        (self.org_sockets / 2).max(1)
    }

    /// Sockets no round holds now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.node.available_permits()
    }

    fn share(&self, org: &str) -> Arc<Semaphore> {
        let mut orgs = self
            .orgs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // An organisation's semaphore is dropped once no round holds or waits for it.
        orgs.retain(|_, s| Arc::strong_count(s) > 1);
        orgs.entry(org.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.org_sockets)))
            .clone()
    }
}

/// How many attempts each endpoint is given at once (at most `most`).
pub(crate) struct Pace {
    most: usize,
    endpoints: Mutex<HashMap<String, usize>>,
}

impl Pace {
    pub(crate) fn new(most: usize) -> Pace {
        Pace {
            most: most.max(1),
            endpoints: Mutex::default(),
        }
    }

    pub(crate) fn of(&self, endpoint: &str) -> usize {
        let endpoints = self
            .endpoints
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        endpoints.get(endpoint).copied().unwrap_or(self.most)
    }

    /// After a round to `endpoint`: halved if an attempt went unanswered (timed out, refused,
    /// cut), doubled back (to `most`) if every attempt was answered.
    pub(crate) fn after<'a>(
        &self,
        endpoint: &str,
        outcomes: impl IntoIterator<Item = &'a AttemptOutcome>,
    ) {
        let mut any = false;
        let unanswered = outcomes.into_iter().any(|o| {
            any = true;
            o.status_code.is_none()
        });
        if !any {
            return;
        }
        let mut endpoints = self
            .endpoints
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = endpoints.get(endpoint).copied().unwrap_or(self.most);
        let next = if unanswered {
            (now / 2).max(1)
        } else {
            (now * 2).min(self.most)
        };
        if next == self.most {
            endpoints.remove(endpoint);
        } else {
            endpoints.insert(endpoint.to_string(), next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: Option<u16>) -> AttemptOutcome {
        AttemptOutcome {
            attempted_at: chrono::Utc::now(),
            status_code: status,
            latency_ms: 1,
            response: None,
        }
    }

    #[tokio::test]
    async fn an_organisation_takes_its_share_and_no_more() {
        let budget = Arc::new(Budget::new(8, 2));
        let first = budget.sockets("slow", 16).await;
        assert_eq!(first.count, 2, "the share, not the 16 asked");
        assert_eq!(budget.free(), 6);
        // The slow organisation's next round waits for its own share...
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.sockets("slow", 1).await.count })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // ...while another's is served from the rest.
        let other = budget.sockets("other", 16).await;
        assert_eq!(other.count, 2);
        assert_eq!(budget.free(), 4);
        drop(first);
        assert_eq!(waiting.await.unwrap(), 1);
        drop(other);
        assert_eq!(budget.free(), 8, "every socket back");
    }

    #[tokio::test]
    async fn the_node_bound_holds_over_every_organisation() {
        let budget = Budget::new(3, 2);
        let a = budget.sockets("a", 2).await;
        let b = budget.sockets("b", 2).await;
        assert_eq!((a.count, b.count), (2, 1), "three in all");
        assert_eq!(budget.free(), 0);
    }

    #[test]
    fn an_endpoint_that_does_not_answer_gets_fewer_attempts() {
        let pace = Pace::new(16);
        assert_eq!(pace.of("e"), 16);
        pace.after("e", &[outcome(Some(200)), outcome(None)]);
        assert_eq!(pace.of("e"), 8);
        for _ in 0..10 {
            pace.after("e", &[outcome(None)]);
        }
        assert_eq!(pace.of("e"), 1, "never below one");
        pace.after("e", &[outcome(Some(500))]);
        assert_eq!(
            pace.of("e"),
            2,
            "an answer, even a refusal, doubles it back"
        );
        pace.after("e", &[]);
        assert_eq!(pace.of("e"), 2, "a round of nothing changes nothing");
        for _ in 0..4 {
            pace.after("e", &[outcome(Some(204))]);
        }
        assert_eq!(pace.of("e"), 16, "at most the configured concurrency");
        assert_eq!(pace.of("other"), 16);
    }
}
