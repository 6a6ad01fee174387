//! The whole service in process (`rewards::Application`, as `rewards serve` runs it) on
//! loopback ports, with Acme's campaign `Main`, member `cust-1` and its wallet `card-1`; shared
//! by the service's tests (`tests/service/`) and the browser's (`tests/browser/`).

use std::path::PathBuf;
use std::time::Duration;

use store::{NewCampaign, NewMember, NewWallet};

pub struct Running {
    pub config: rewards::Config,
    pub store: store::Store,
    pub org: store::Organisation,
    pub campaign: store::Campaign,
    /// The client API's address.
    pub http: std::net::SocketAddr,
    /// The admin listener's address (the admin API and the console).
    pub admin: std::net::SocketAddr,
    pub sftp: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Starts it with its data under `data_dir`, the configuration changed by `tweak` first.
    pub async fn start(data_dir: PathBuf, tweak: impl FnOnce(&mut rewards::Config)) -> Running {
        let mut config = rewards::Config {
            data_dir,
            http_addr: ([127, 0, 0, 1], 0).into(),
            sftp_addr: ([127, 0, 0, 1], 0).into(),
            admin_addr: ([127, 0, 0, 1], 0).into(),
            ..Default::default()
        };
        tweak(&mut config);
        let store = rewards::open_store(&config).await.unwrap();
        let org = store.tenancy().create_org("Acme").await.unwrap();
        let main = NewCampaign {
            name: "Main".into(),
            currency: "PTS".into(),
            ..Default::default()
        };
        let campaign = store
            .tenancy()
            .create_campaign(&org.scope(), main)
            .await
            .unwrap();
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: "u-1".into(),
            external_id: "cust-1".into(),
            ..Default::default()
        };
        store
            .members()
            .create_member(&org.scope(), member)
            .await
            .unwrap();
        let wallet = NewWallet {
            owner: Some("cust-1".into()),
            external_id: Some("card-1".into()),
            name: None,
        };
        store
            .ledger()
            .create_wallet(&campaign, wallet)
            .await
            .unwrap();
        let application = rewards::Application::build(config.clone(), store.clone())
            .await
            .unwrap();
        let http = application.http_addr().unwrap();
        let admin = application.admin_addr().unwrap();
        let sftp = application.sftp_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(application.run(async {
            let _ = stopped.await;
        }));
        Running {
            config,
            store,
            org,
            campaign,
            http,
            admin,
            sftp,
            stop,
            running,
        }
    }

    /// An API key for `Main`, issued as the store issues one by default: its key and secret.
    pub async fn api_key(&self) -> (String, String) {
        let new = store::NewKey {
            campaign_id: self.campaign.id.clone(),
            ..Default::default()
        };
        let key = self
            .store
            .tenancy()
            .issue_key(&self.org.scope(), new)
            .await
            .unwrap();
        (key.key.api_key, key.secret)
    }

    /// Sends `earn` to the client API's `POST /v1/transactions/earn` with `key` (`api_key`'s
    /// key and secret): the answer's status.
    pub async fn earn(&self, key: &(String, String), earn: &serde_json::Value) -> u16 {
        reqwest::Client::new()
            .post(format!("http://{}/v1/transactions/earn", self.http))
            .header("x-api-key", &key.0)
            .header("x-api-secret", &key.1)
            .json(earn)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Sends the stop signal and waits (at most 30 s) for every part to end.
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.running)
            .await
            .expect("every part stops")
            .unwrap()
            .unwrap();
    }
}
