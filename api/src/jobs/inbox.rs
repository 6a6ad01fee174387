//! Group commit for earn submissions: concurrent `POST /v1/transactions/earn` requests hand
//! their checked earns to one task, which stores whatever has gathered with a single statement
//! and answers each. Under light load a batch is one earn; under heavy load hundreds share one
//! write, which is what lets a single SQLite writer accept thousands a second.

use store::{EarnRequest, PendingEarn, Store, StoreError};
use tokio::sync::{mpsc, oneshot};

/// The most earns stored by one statement.
const BATCH: usize = 500;

type Reply = oneshot::Sender<Result<EarnRequest, StoreError>>;

/// Where handlers drop earns to be stored. Cheap to clone.
#[derive(Clone)]
pub struct EarnInbox {
    sender: mpsc::Sender<(PendingEarn, Reply)>,
}

impl EarnInbox {
    /// Starts the storing task; it ends when every inbox clone is gone.
    pub fn start(store: Store, stored: std::sync::Arc<tokio::sync::Notify>) -> Self {
        let (sender, mut receiver) = mpsc::channel::<(PendingEarn, Reply)>(BATCH * 4);
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            while receiver.recv_many(&mut batch, BATCH).await > 0 {
                let (pending, replies): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                match store.store_earns(pending).await {
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
        });
        EarnInbox { sender }
    }

    /// Stores `earn` (with others that arrive meanwhile) and returns its request: a new one,
    /// or the first for the same earn under its id; `already_exists` for another earn under it.
    pub async fn submit(&self, earn: PendingEarn) -> Result<EarnRequest, StoreError> {
        let stopped = || StoreError::NotCommitted("the earn inbox has stopped".into());
        let (reply, answer) = oneshot::channel();
        self.sender
            .send((earn, reply))
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}
