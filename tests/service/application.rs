//! The whole service in-process (`rewards::Application`) on port 0, as `rewards serve` runs it:
//! an earn over HTTP and a file dropped into an organisation's inbox are both credited, the SFTP
//! door answers, and one stop signal ends every part.

use std::time::{Duration, Instant};

use ingest::folders::{Folder, Tree};
use serde_json::json;
use store::{NewCampaign, NewKey, NewMember, NewWallet, Tokens};
use tokio::io::AsyncReadExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_service_runs_in_process_and_stops_on_one_signal() {
    let dir = tempfile::tempdir().unwrap();
    let config = rewards::Config {
        data_dir: dir.path().join("data"),
        http_addr: ([127, 0, 0, 1], 0).into(),
        sftp_addr: ([127, 0, 0, 1], 0).into(),
        admin_addr: ([127, 0, 0, 1], 0).into(),
        ..Default::default()
    };
    let store = rewards::open_store(&config).await.unwrap();
    let org = store.tenancy().create_org("Acme").await.unwrap();
    let new = NewCampaign {
        name: "Main".into(),
        currency: "PTS".into(),
        ..Default::default()
    };
    let campaign = store
        .tenancy()
        .create_campaign(&org.scope(), new)
        .await
        .unwrap();
    let new = NewKey {
        campaign_id: campaign.id.clone(),
        ..Default::default()
    };
    let key = store.tenancy().issue_key(&org.scope(), new).await.unwrap();
    let member = NewMember {
        first_name: "Ada".into(),
        idp: "reference".into(),
        user_id: "u-1".into(),
        external_id: "card-1".into(),
        ..Default::default()
    };
    store
        .members()
        .create_member(&org.scope(), member)
        .await
        .unwrap();
    let wallet = NewWallet {
        owner: Some("card-1".into()),
        external_id: Some("w-1".into()),
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
    let sftp = application.sftp_addr().unwrap();
    assert!(
        http.port() != 0 && sftp.port() != 0,
        "free ports were picked"
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(application.run(async {
        let _ = stopped.await;
    }));

    let earn = json!({"id": "e-1", "walletId": "w-1", "amount": 25,
        "date": "2026-11-18T10:15:00Z"});
    let answer = reqwest::Client::new()
        .post(format!("http://{http}/v1/transactions/earn"))
        .header("x-api-key", &key.key.api_key)
        .header("x-api-secret", &key.secret)
        .json(&earn)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let inbox = Tree::open(&config.data_dir, &org.id)
        .unwrap()
        .folder(Folder::Inbox);
    std::fs::write(
        inbox.join("earns.csv"),
        "id,walletId,amount,date\nf-1,w-1,5,2026-11-20\n",
    )
    .unwrap();
    let started = Instant::now();
    loop {
        let balance = store
            .ledger()
            .get_wallet(&campaign, "w-1")
            .await
            .unwrap()
            .balance;
        if balance == Tokens::whole(30) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the earn and the file are credited: {balance}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut banner = [0u8; 7];
    let mut door = tokio::net::TcpStream::connect(sftp).await.unwrap();
    door.read_exact(&mut banner).await.unwrap();
    assert_eq!(&banner, b"SSH-2.0");
    drop(door);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("every part stops")
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(http).await.is_err(),
        "the HTTP door is closed"
    );
}
