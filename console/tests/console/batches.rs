//! Batch files in the console: received files listed, a loading file's progress followed
//! without a reload, the report with its rejected rows, and the rejected rows downloaded.

use ingest::batch::pipeline::Progress;
use reqwest::{Method, StatusCode};
use store::{NewMember, NewWallet, Role};

use crate::console_tests;
use crate::helpers::Console;

const FILE: &str = "id,walletId,amount,date\n\
    t-1,card-1,12.50,2026-11-20T10:15:00Z\n\
    t-2,card-1,twelve,2026-11-20T10:16:00Z\n\
    t-3,card-9,5,2026-11-20T10:17:00Z\n";

async fn wallet(app: &Console) {
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let member = NewMember {
        first_name: "Ada".into(),
        idp: "reference".into(),
        user_id: "u-1".into(),
        external_id: "cust-1".into(),
        ..Default::default()
    };
    app.store
        .members()
        .create_member(&app.acme, member)
        .await
        .unwrap();
    let wallet = NewWallet {
        owner: Some("cust-1".into()),
        external_id: Some("card-1".into()),
        name: None,
    };
    app.store
        .ledger()
        .create_wallet(&campaign, wallet)
        .await
        .unwrap();
}

console_tests! {
    a_file_is_followed_while_it_loads_then_reported => |app: Console| async move {
        wallet(&app).await;
        let org = app.acme.id().to_owned();
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let batch = app.receive("earns.csv", FILE).await;
        let list = viewer.get(&format!("/console/orgs/{org}/batches")).await;
        let text = list.expect(StatusCode::OK).to_owned();
        assert!(text.contains("earns.csv") && text.contains(">received<"), "{text}");
        assert!(text.contains("hx-trigger=\"every 2s\""), "the list follows a file still to load");
        let page = format!("/console/orgs/{org}/batches/{}", batch.id);
        let text = viewer.get(&page).await.expect(StatusCode::OK).to_owned();
        assert!(text.contains("waiting to be loaded") && text.contains("hx-trigger=\"every 1s\""), "{text}");

        // While it loads, the panel htmx asks for says how far it has got.
        app.live.set(&batch.id, Progress { rows: 2_000, loaded: 1_990, rejected: 10, done: 40, of: 100 });
        let panel = viewer
            .request(Method::GET, &format!("{page}/progress"), None, &[("hx-request", "true")])
            .await;
        let text = panel.expect(StatusCode::OK);
        assert!(text.trim_start().starts_with("<div class=\"panel\" id=\"batch-progress\""), "a fragment: {text}");
        assert!(text.contains("id=\"progress-rows\">2,000<") && text.contains("id=\"progress-loaded\">1,990<"), "{text}");
        assert!(text.contains("<progress value=\"40\" max=\"100\""), "{text}");
        app.live.end(&batch.id);

        app.process(&batch.id, &|_| {}).await;
        // Done: htmx is sent to the whole page, with the report.
        let done = viewer
            .request(Method::GET, &format!("{page}/progress"), None, &[("hx-request", "true")])
            .await;
        assert_eq!(done.headers["hx-redirect"], format!("orgs/{org}/batches/{}", batch.id));
        let text = viewer.get(&page).await.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"rows\">3<") && text.contains("id=\"loaded\">1<") && text.contains("id=\"rejected\">2<"), "{text}");
        assert!(!text.contains("hx-trigger"), "a done file is not polled");
        assert!(text.contains("Rejected, by reason") && text.contains("<td class=\"num\">3</td>") && text.contains("twelve"), "{text}");
        let list = viewer.get(&format!("/console/orgs/{org}/batches")).await.text;
        assert!(list.contains(">completed<") && !list.contains("hx-trigger"), "{list}");

        let csv = viewer.get(&format!("{page}/rejected.csv")).await;
        assert_eq!(csv.status, StatusCode::OK);
        assert!(csv.headers["content-disposition"].to_str().unwrap().contains("earns.csv.rejected.csv"));
        assert_eq!(csv.text.lines().count(), 3, "{}", csv.text);

        // The same content again: a duplicate, pointing at the first.
        let again = app.receive("earns-again.csv", FILE).await;
        let text = viewer.get(&format!("/console/orgs/{org}/batches/{}", again.id)).await.text;
        assert!(text.contains(">duplicate<") && text.contains(&format!("batches/{}", batch.id)), "{text}");
    };
}
