//! Exports in the console: one run now and downloaded (a range too), a wrong period said beside
//! its field, the daily export set and stopped; every transaction type is offered.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use store::{NewMember, NewWallet, Role, TransactionKind};

use crate::console_tests;
use crate::helpers::Console;

console_tests! {
    an_export_is_run_downloaded_and_scheduled => |app: Console| async move {
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
        let member = NewMember { first_name: "Ada".into(), idp: "reference".into(), user_id: "u-1".into(), external_id: "cust-1".into(), ..Default::default() };
        app.store.members().create_member(&app.acme, member).await.unwrap();
        let wallet = NewWallet { owner: Some("cust-1".into()), external_id: Some("card-1".into()), name: None };
        app.store.ledger().create_wallet(&campaign, wallet).await.unwrap();
        let org = app.acme.id().to_owned();
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        let exports = format!("/console/orgs/{org}/exports");
        let text = admin.get(&exports).await.expect(StatusCode::OK).to_owned();
        for kind in TransactionKind::ALL {
            assert!(text.contains(&format!("value=\"{}\"", kind.as_str())), "{kind:?} is offered");
        }
        assert!(text.contains("No daily export."));
        let wrong = admin.submit(&exports, &[("from", "2026-12-02"), ("to", "2026-12-01"), ("format", "csv")]).await;
        assert!(wrong.expect(StatusCode::OK).contains("id=\"to-error\""), "{}", wrong.text);
        let started = admin.submit(&exports, &[("from", "2026-01-01"), ("to", "2026-12-31"), ("format", "csv"), ("campaign", &campaign.id)]).await;
        assert_eq!(started.status, StatusCode::SEE_OTHER, "{}", started.text);
        // Written in the background: the list shows it once done.
        let began = Instant::now();
        let name = loop {
            let text = admin.get(&exports).await.text;
            if let Some(at) = text.find("download>") {
                let name = &text[at + "download>".len()..];
                break name[..name.find('<').unwrap()].to_owned();
            }
            assert!(began.elapsed() < Duration::from_secs(20), "never written: {text}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(name.ends_with(".csv"), "{name}");
        let file = admin.get(&format!("{exports}/{name}")).await;
        assert_eq!(file.status, StatusCode::OK);
        assert!(file.headers["content-disposition"].to_str().unwrap().contains(&name));
        assert!(file.text.starts_with("id,") || file.text.contains(','), "{}", file.text);
        let part = admin.request(Method::GET, &format!("{exports}/{name}"), None, &[("range", "bytes=0-1")]).await;
        assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(part.text.len(), 2);

        let schedule = format!("{exports}/schedule");
        let bad = admin.submit(&schedule, &[("at", "25:00"), ("format", "csv")]).await;
        assert!(bad.expect(StatusCode::OK).contains("id=\"at-error\""), "{}", bad.text);
        let set = admin.submit(&schedule, &[("at", "03:15"), ("format", "csv")]).await;
        assert_eq!(set.status, StatusCode::SEE_OTHER);
        let text = admin.get(&format!("{exports}?done=schedule-saved")).await.text;
        assert!(text.contains("<strong>03:15</strong>") && text.contains("The daily export is set."), "{text}");
        let stopped = admin.submit(&schedule, &[("remove", "1")]).await;
        assert_eq!(stopped.status, StatusCode::SEE_OTHER);
        assert!(admin.get(&exports).await.text.contains("No daily export."));
    };
}
