//! The whole service in-process (`rewards::Application`) on port 0, as `rewards serve` runs it:
//! an earn over HTTP and a file dropped into an organisation's inbox are both credited, the SFTP
//! door answers, and one stop signal ends every part.

use std::time::{Duration, Instant};

use ingest::folders::{Folder, Tree};
use serde_json::json;
use store::Tokens;
use tokio::io::AsyncReadExt;

use crate::running::Running;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_service_runs_in_process_and_stops_on_one_signal() {
    let dir = tempfile::tempdir().unwrap();
    let service = Running::start(dir.path().join("data"), |_| {}).await;
    let (http, sftp) = (service.http, service.sftp);
    assert!(
        http.port() != 0 && sftp.port() != 0,
        "free ports were picked"
    );
    let key = service.api_key().await;

    let earn = json!({"id": "e-1", "walletId": "card-1", "amount": 25,
        "date": "2026-11-18T10:15:00Z"});
    assert_eq!(service.earn(&key, &earn).await, 202);
    let inbox = Tree::open(&service.config.data_dir, &service.org.id)
        .unwrap()
        .folder(Folder::Inbox);
    std::fs::write(
        inbox.join("earns.csv"),
        "id,walletId,amount,date\nf-1,card-1,5,2026-11-20\n",
    )
    .unwrap();
    let started = Instant::now();
    loop {
        let balance = service
            .store
            .ledger()
            .get_wallet(&service.campaign, "card-1")
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

    service.stop().await;
    assert!(
        tokio::net::TcpStream::connect(http).await.is_err(),
        "the HTTP door is closed"
    );
}
