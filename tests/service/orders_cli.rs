//! Redemption codes as an operator runs the service: the key that seals them is made once in the
//! data directory (or taken from `REWARDS_CODES_KEY`) and outlives restarts, every decrypt is
//! logged with the API key and the request id, and no code ever reaches the log in clear.

use crate::common::{programme, serve};
use serde_json::{Value, json};

const CATALOGUE: &str = r#"{"products": [{"id": "mug", "name": "Mug",
    "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]}]}"#;

struct Client {
    http: reqwest::Client,
    base: String,
    key: String,
    secret: String,
}

impl Client {
    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = request
            .header("x-api-key", &self.key)
            .header("x-api-secret", &self.secret)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        self.send(self.http.post(url).json(&body)).await
    }

    async fn get(&self, path: &str, request_id: &str) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        self.send(self.http.get(url).header("x-request-id", request_id))
            .await
    }
}

#[tokio::test]
async fn codes_are_sealed_with_a_kept_key_and_every_decrypt_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let (_org, campaign, key) = programme(&env);
    let file = dir.path().join("catalogue.json");
    std::fs::write(&file, CATALOGUE).unwrap();
    crate::common::ok(
        &env,
        &[
            "catalogue",
            "import",
            "--campaign",
            &campaign,
            file.to_str().unwrap(),
        ],
    );

    let (server, base) = serve(&env);
    let client = Client {
        http: reqwest::Client::new(),
        base,
        key: key["apiKey"].as_str().unwrap().to_string(),
        secret: key["apiSecret"].as_str().unwrap().to_string(),
    };
    let member = json!({"firstName": "Ada", "userId": "u1", "externalId": "card-1"});
    assert_eq!(client.post("/v1/members", member).await.0, 200);
    let (status, order) = client
        .post(
            "/v1/orders",
            json!({"owner": "card-1", "lines": [{"productId": "mug"}]}),
        )
        .await;
    assert_eq!(status, 200, "{order}");
    let line = format!(
        "/v1/orders/{}/lines/{}?decrypt=true",
        order["id"].as_str().unwrap(),
        order["lines"][0]["id"].as_str().unwrap()
    );
    let (status, clear) = client.get(&line, "audit-check-1").await;
    assert_eq!(status, 200, "{clear}");
    let code = clear["codes"][0]["code"].as_str().unwrap().to_string();

    let key_file = dir.path().join("codes.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "only the service's user reads the key");
    }
    let sealing_key = std::fs::read(&key_file).unwrap();
    // The request has been answered; its log lines are written by now or within moments.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let audit = loop {
        let log = server.log();
        if let Some(line) = log
            .iter()
            .find(|l| l.contains("redemption codes decrypted"))
        {
            break line.clone();
        }
        assert!(std::time::Instant::now() < deadline, "{log:#?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let key_id = key["id"].as_str().unwrap();
    assert!(
        audit.contains(key_id) && audit.contains("audit-check-1"),
        "{audit}"
    );
    let log = server.log().join("\n");
    assert!(!log.contains(&code), "a code in clear in the log");
    assert!(!log.contains(&code.replace('-', "")));
    drop(server);

    // After a restart the kept key still opens the codes.
    let (server, base) = serve(&env);
    let client = Client { base, ..client };
    let (status, again) = client.get(&line, "audit-check-2").await;
    assert_eq!(status, 200);
    assert_eq!(again["codes"][0]["code"], code);
    assert_eq!(std::fs::read(&key_file).unwrap(), sealing_key, "not remade");
    drop(server);

    // A configured key is used instead of the file; a malformed one stops the service with a
    // message naming the setting.
    let mut configured = env.clone();
    configured.push(("REWARDS_CODES_KEY", "ab".repeat(32)));
    let (server, base) = serve(&configured);
    let client = Client { base, ..client };
    let (status, order) = client
        .post(
            "/v1/orders",
            json!({"owner": "card-1", "lines": [{"productId": "mug"}]}),
        )
        .await;
    assert_eq!(status, 200, "{order}");
    drop(server);
    let mut malformed = env.clone();
    malformed.push(("REWARDS_CODES_KEY", "not-hex".into()));
    let output = crate::common::rewards(&malformed)
        .arg("serve")
        .env("REWARDS_HTTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_SFTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_ADMIN_ADDR", "127.0.0.1:0")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("REWARDS_CODES_KEY"), "{stderr}");
}
