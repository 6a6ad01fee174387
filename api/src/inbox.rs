//! Group commit for earn submissions: concurrent `POST /v1/transactions/earn` requests hand
//! their checked earns to one task, which stores whatever has gathered with a single statement
//! and answers each. Under light load a batch is one earn; under heavy load hundreds share one
//! write, which is what lets a single SQLite writer accept thousands a second.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use store::{EarnRequest, PendingEarn, Store, StoreError};
use tokio::sync::{Notify, mpsc, oneshot};

/// The most earns stored by one statement.
const BATCH: usize = 500;

type Reply = oneshot::Sender<Result<EarnRequest, StoreError>>;
/// An earn waiting to be stored, with where its answer goes.
type Waiting = (PendingEarn, Reply);

/// Where handlers drop earns to be stored. Cheap to clone.
#[derive(Clone)]
pub struct EarnInbox {
    sender: mpsc::Sender<Waiting>,
    /// Until the writer is taken: what it reads.
    receiver: Arc<Mutex<Option<mpsc::Receiver<Waiting>>>>,
    /// Whether the writer has been taken: without one, a submission is refused at once rather
    /// than left waiting.
    writing: Arc<AtomicBool>,
}

impl Default for EarnInbox {
    fn default() -> Self {
        EarnInbox::new()
    }
}

impl EarnInbox {
    pub fn new() -> Self {
        let (sender, receiver) = mpsc::channel::<Waiting>(BATCH * 4);
        EarnInbox {
            sender,
            receiver: Arc::new(Mutex::new(Some(receiver))),
            writing: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The task that stores what gathers in the inbox, waking `stored` after each write; it
    /// returns once every inbox clone is gone. Only the first call has it (`None` after).
    pub fn writer(
        &self,
        store: Store,
        stored: Arc<Notify>,
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        let mut receiver = self.receiver.lock().ok()?.take()?;
        self.writing.store(true, Ordering::Release);
        Some(async move {
            let mut batch = Vec::with_capacity(BATCH);
            while receiver.recv_many(&mut batch, BATCH).await > 0 {
                let (pending, replies): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                match store.ledger().store_earns(pending).await {
                    Ok(answers) => {
                        for (reply, answer) in replies.into_iter().zip(answers) {
                            let _ = reply.send(answer);
                        }
                        stored.notify_one();
                    }
                    Err(err) => {
                        for reply in replies {
                            let _ = reply.send(Err(StoreError::NotCommitted(err.to_string())));
                        }
                    }
                }
            }
        })
    }

    /// Stores `earn` (with others that arrive meanwhile) and returns its request: a new one,
    /// or the first for the same earn under its id; `already_exists` for another earn under it.
    pub async fn submit(&self, earn: PendingEarn) -> Result<EarnRequest, StoreError> {
        let stopped = || StoreError::NotCommitted("the earn inbox has stopped".into());
        if !self.writing.load(Ordering::Acquire) {
            return Err(StoreError::NotCommitted(
                "the earn inbox has no writer: the node's runtime is not started".into(),
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.sender
            .send((earn, reply))
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}
