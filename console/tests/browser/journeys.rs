//! Signing in with a second factor; support finding a member among 100,000 and adjusting a
//! balance that a second operator approves; a viewer that sees no button it may not use; an
//! org-admin running a file dry against the mappings, backtesting a rule change and importing
//! and searching the catalogue; support moderating a review; the pages on a tablet.

use store::testing::TestStore;
use store::{AdjustmentLimits, NewMember, NewWallet, Role, Tokens, operators_totp as totp};

use crate::helpers::{CHOSEN, Console};
use crate::steps::{first_sign_in, visit};
use crate::webdriver::Driver;

/// Members in the organisation a support operator finds one in.
const MEMBERS: usize = 100_000;

const CHROMIUM: &str = "needs Chromium and chromedriver (.ci/run installs them)";

#[tokio::test]
#[ignore = "needs Chromium and chromedriver (.ci/run installs them)"]
async fn an_operator_enrols_a_second_factor_and_signs_in_with_it() {
    let _ = CHROMIUM;
    let app = Console::spawn(TestStore::sqlite().await).await;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    let one_time = app
        .add_operator("owner@example.com", Role::Owner, &[])
        .await;
    browser.goto(&format!("{}/console/", app.base)).await;
    browser.wait_for_text("h1", "Sign in").await;
    visit(&browser, &app.base, "sign-in").await;
    first_sign_in(&browser, &app.base, "owner@example.com", &one_time, CHOSEN).await;
    browser
        .goto(&format!("{}/console/account/two-factor", app.base))
        .await;
    browser
        .click(
            &browser
                .find("form[action='account/two-factor'] button")
                .await,
        )
        .await;
    browser.find(".qr svg").await;
    visit(&browser, &app.base, "two-factor-enrolment").await;
    let secret = browser.text(&browser.find("#totp-secret").await).await;
    let key = totp::from_base32(&secret).unwrap();
    let code = format!(
        "{:06}",
        totp::code_at(&key, totp::step_of(chrono::Utc::now().timestamp()))
    );
    browser.fill("#code", &code).await;
    browser
        .click(
            &browser
                .find("form[action='account/two-factor/confirm'] button")
                .await,
        )
        .await;
    let codes = browser.wait_for_text("#recovery-codes", "").await;
    assert_eq!(codes.lines().count(), 10, "{codes}");
    visit(&browser, &app.base, "recovery-codes").await;
    browser
        .click(&browser.find("form[action='sign-out'] button").await)
        .await;
    browser.wait_for_text("h1", "Sign in").await;
    // Without the code: asked for it beside its field.
    browser.fill("#email", "owner@example.com").await;
    browser.fill("#password", CHOSEN).await;
    browser
        .click(&browser.find("form[action='sign-in'] button").await)
        .await;
    browser.wait_for_text("#code-error", "6-digit code").await;
    // With it (the next step's code: the one used to enrol may not be used twice).
    let next = totp::step_of(chrono::Utc::now().timestamp()) + 1;
    let code = format!("{:06}", totp::code_at(&key, next));
    browser.fill("#password", CHOSEN).await;
    browser.fill("#code", &code).await;
    browser
        .click(&browser.find("form[action='sign-in'] button").await)
        .await;
    browser.wait_for_text("h1", "Organisations").await;
    browser.wait_for_text("main", "Acme").await;
    visit(&browser, &app.base, "organisations").await;
    browser.quit().await;
}

/// Acme's campaign with `members` members `cust-000001`..., the last with wallet `card-1`,
/// created by `SEEDERS` tasks at once.
async fn seed(app: &Console, members: usize) -> String {
    const SEEDERS: usize = 8;
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let mut seeders = tokio::task::JoinSet::new();
    for seeder in 0..SEEDERS {
        let (store, org) = (app.store.clone(), app.acme.clone());
        seeders.spawn(async move {
            for i in (1 + seeder..=members).step_by(SEEDERS) {
                let member = NewMember {
                    first_name: format!("Member {i}"),
                    email: Some(format!("m{i}@shop.example")),
                    idp: "reference".into(),
                    user_id: format!("u-{i}"),
                    external_id: format!("cust-{i:06}"),
                    ..Default::default()
                };
                store.members().create_member(&org, member).await.unwrap();
            }
        });
    }
    while let Some(seeded) = seeders.join_next().await {
        seeded.unwrap();
    }
    let wallet = NewWallet {
        owner: Some(format!("cust-{members:06}")),
        external_id: Some("card-1".into()),
        name: None,
    };
    app.store
        .ledger()
        .create_wallet(&campaign, wallet)
        .await
        .unwrap();
    campaign.id
}

#[tokio::test]
#[ignore = "needs Chromium and chromedriver (.ci/run installs them)"]
async fn support_adjusts_a_balance_and_a_second_operator_approves_it() {
    let app = Console::spawn(TestStore::sqlite().await).await;
    // The member to find is one among 100,000.
    let campaign = seed(&app, MEMBERS).await;
    app.store
        .operators()
        .set_adjustment_limits(AdjustmentLimits {
            owner: None,
            support: Some(Tokens::whole(10_000)),
            approval_over: Some(Tokens::whole(500)),
        })
        .await
        .unwrap();
    let first = app
        .add_operator("first@example.com", Role::Support, &[&app.acme])
        .await;
    let second = app
        .add_operator("second@example.com", Role::Support, &[&app.acme])
        .await;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    first_sign_in(&browser, &app.base, "first@example.com", &first, CHOSEN).await;
    browser.goto(&format!("{}/console/", app.base)).await;
    browser
        .click(&browser.find("main a[href^='orgs/']").await)
        .await;
    browser.wait_for_text("#members", "100,000").await;
    browser.find("svg.chart polyline").await;
    visit(&browser, &app.base, "overview").await;
    browser
        .click(&browser.find("nav.sub a[href$='/members']").await)
        .await;
    browser
        .wait_for_text("#member-rows", "100,000 in all")
        .await;
    visit(&browser, &app.base, "members").await;
    // The list narrows as one types, without a reload.
    browser.fill("#q", "cust-100000").await;
    browser.wait_for_text("#member-rows", "1 in all").await;
    assert!(
        browser.current_url().await.contains("q=cust-100000"),
        "the address follows the search"
    );
    browser.click(&browser.find("#member-rows a").await).await;
    browser.wait_for_text("h1", "Member 100000").await;
    visit(&browser, &app.base, "member").await;
    browser
        .click(&browser.find("a[href*='/wallets/']").await)
        .await;
    browser.wait_for_text("h1", "Wallet card-1").await;
    browser.fill("#amount", "5000").await;
    browser.fill("#comment", "Missing March earns").await;
    browser
        .click(&browser.find("form[action$='/adjust'] button").await)
        .await;
    browser.accept_confirmation().await;
    browser
        .wait_for_text("main", "waits for another operator's approval")
        .await;
    visit(&browser, &app.base, "wallet").await;
    browser.quit().await;

    let browser = driver.session().await;
    first_sign_in(&browser, &app.base, "second@example.com", &second, CHOSEN).await;
    browser
        .goto(&format!(
            "{}/console/orgs/{}/adjustments",
            app.base,
            app.acme.id()
        ))
        .await;
    browser.wait_for_text("main", "Missing March earns").await;
    visit(&browser, &app.base, "approvals").await;
    browser
        .click(&browser.find("form[action$='/approve'] button").await)
        .await;
    browser.accept_confirmation().await;
    browser.wait_for_text("main", "approved and applied").await;
    let wallet = format!(
        "{}/console/orgs/{}/campaigns/{campaign}/wallets/card-1",
        app.base,
        app.acme.id()
    );
    browser.goto(&wallet).await;
    browser.wait_for_text("#balance", "5,000 PTS").await;
    browser.quit().await;
}

#[tokio::test]
#[ignore = "needs Chromium and chromedriver (.ci/run installs them)"]
async fn a_viewer_sees_no_button_it_may_not_use() {
    let app = Console::spawn(TestStore::sqlite().await).await;
    let campaign = seed(&app, 1).await;
    let viewer = app
        .add_operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    first_sign_in(&browser, &app.base, "viewer@example.com", &viewer, CHOSEN).await;
    let wallet = format!(
        "{}/console/orgs/{}/campaigns/{campaign}/wallets/card-1",
        app.base,
        app.acme.id()
    );
    browser.goto(&wallet).await;
    browser.wait_for_text("h1", "Wallet card-1").await;
    visit(&browser, &app.base, "wallet-as-viewer").await;
    assert!(
        !browser.has("form[action$='/adjust']").await,
        "no adjustment form"
    );
    assert!(!browser.has("a[href='operators']").await && !browser.has("a[href='audit']").await);
    browser
        .goto(&format!(
            "{}/console/orgs/{}/adjustments",
            app.base,
            app.acme.id()
        ))
        .await;
    browser.find("main h1").await;
    assert!(!browser.has("form[action$='/approve']").await);

    // On a tablet held upright: every page fits the width; wide tables scroll in their box.
    browser.resize(768, 1024).await;
    let org = format!("{}/console/orgs/{}", app.base, app.acme.id());
    for (name, page) in [
        ("overview", format!("{org}/")),
        ("members", format!("{org}/members")),
        (
            "wallet",
            format!("{org}/campaigns/{campaign}/wallets/card-1"),
        ),
        ("batches", format!("{org}/batches")),
        ("webhooks", format!("{org}/webhooks")),
    ] {
        browser.goto(&page).await;
        browser.find("main h1").await;
        assert!(
            !browser.scrolls_sideways().await,
            "{name} is wider than a tablet"
        );
        visit(&browser, &app.base, &format!("tablet-{name}")).await;
    }
    browser.quit().await;
}

#[tokio::test]
#[ignore = "needs Chromium and chromedriver (.ci/run installs them)"]
async fn an_org_admin_backtests_a_rule_change_and_support_moderates_a_review() {
    let app = Console::spawn(TestStore::sqlite().await).await;
    let campaign = seed(&app, 1).await;
    let earns = "id,walletId,amount,date\nt-1,card-1,10,2026-11-20T10:00:00Z\nt-2,card-1,30,2026-11-21T10:00:00Z\n";
    let batch = app.receive("earns.csv", earns).await;
    app.process(&batch.id, &|_| {}).await;
    let admin = app
        .add_operator("admin@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    first_sign_in(&browser, &app.base, "admin@example.com", &admin, CHOSEN).await;
    let rules = format!(
        "{}/console/orgs/{}/campaigns/{campaign}/rules",
        app.base,
        app.acme.id()
    );
    browser.goto(&rules).await;
    browser.wait_for_text("h1", "Rules").await;
    let doubled = "[[rule]]\nid = \"base\"\npriority = 10\naward = \"amount\"\n\n[[rule]]\nid = \"double\"\npriority = 20\nmultiply = 2\n";
    browser.fill("#source", doubled).await;
    browser.fill("#from", "11/01/2026").await;
    browser.fill("#to", "11/30/2026").await;
    browser
        .click(&browser.find("button[value='backtest']").await)
        .await;
    browser.wait_for_text("#difference", "40 PTS").await;
    visit(&browser, &app.base, "backtest").await;

    // Tomorrow's file run dry, sent by the page's script: its summary and its refused row, and
    // nothing credited.
    let dir = tempfile::tempdir().unwrap();
    let tomorrow = dir.path().join("tomorrow.csv");
    let rows = "id,walletId,amount,date\nt-3,card-1,5,2026-11-22T10:00:00Z\nt-4,card-1,lots,2026-11-22T11:00:00Z\n";
    std::fs::write(&tomorrow, rows).unwrap();
    browser
        .goto(&format!(
            "{}/console/orgs/{}/mappings",
            app.base,
            app.acme.id()
        ))
        .await;
    browser.choose_file("#dry-file", &tomorrow).await;
    browser
        .click(&browser.find("form[data-upload] button").await)
        .await;
    browser
        .wait_for_text("#dry-run-result", "Nothing was credited")
        .await;
    browser.wait_for_text("#dry-run-result table", "lots").await;
    visit(&browser, &app.base, "dry-run").await;
    let main = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let wallet = app
        .store
        .ledger()
        .get_wallet(&main, "card-1")
        .await
        .unwrap();
    assert_eq!(
        wallet.balance,
        Tokens::whole(40),
        "a dry run credits nothing"
    );

    // The catalogue: a document checked (its report, nothing applied), applied after a
    // confirmation, then searched as a client would (a typo forgiven); a refused price filter
    // is named beside its field.
    browser
        .goto(&format!(
            "{}/console/orgs/{}/campaigns/{campaign}/catalogue",
            app.base,
            app.acme.id()
        ))
        .await;
    browser
        .wait_for_text("#no-products", "No product yet")
        .await;
    let document = r#"{"products": [{"id": "mug", "name": "Mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]}, {"id": "towel", "name": "Tea towel", "variants": [{"id": "towel-1", "name": "Linen", "price": 1200}]}]}"#;
    browser.fill("#document", document).await;
    browser
        .click(&browser.find("button[value='check']").await)
        .await;
    browser
        .wait_for_text("#import-report", "nothing is applied yet")
        .await;
    assert!(browser.has("#no-products").await, "a check applies nothing");
    browser
        .click(&browser.find("button[value='apply']").await)
        .await;
    browser.accept_confirmation().await;
    browser.wait_for_text("#import-report", "Applied").await;
    browser.fill("#search", "towle").await;
    browser
        .click(&browser.find("#product-search button[type='submit']").await)
        .await;
    browser.wait_for_url("search=towle").await;
    let found = browser.wait_for_text("#products", "Tea towel").await;
    assert!(!found.contains("Mug"), "{found}");
    browser.fill("#min", "lots").await;
    browser
        .click(&browser.find("#product-search button[type='submit']").await)
        .await;
    browser.wait_for_url("min=lots").await;
    browser.wait_for_text("#min-error", "").await;
    let kept = browser.find("#search").await;
    assert_eq!(
        browser.attribute(&kept, "value").await.as_deref(),
        Some("towle")
    );
    visit(&browser, &app.base, "catalogue").await;
    browser.quit().await;

    // A review held for its language, moderated by support.
    let review = store::NewReview {
        member: "cust-000001".into(),
        voucher_id: "mug".into(),
        partner_id: "p-1".into(),
        rating: 1,
        review_text: "this mug is shit".into(),
    };
    app.store
        .community()
        .create_review(&main, review, &store::Moderation::default())
        .await
        .unwrap();
    let support = app
        .add_operator("support@example.com", Role::Support, &[&app.acme])
        .await;
    let browser = driver.session().await;
    first_sign_in(&browser, &app.base, "support@example.com", &support, CHOSEN).await;
    browser
        .goto(&format!("{}/console/orgs/{}/", app.base, app.acme.id()))
        .await;
    browser.wait_for_text("#reviews-waiting", "1").await;
    browser.click(&browser.find("#reviews-waiting").await).await;
    browser.wait_for_text("main", "this mug is shit").await;
    visit(&browser, &app.base, "reviews").await;
    browser
        .click(&browser.find("form[action$='/remove'] button").await)
        .await;
    browser.accept_confirmation().await;
    browser
        .wait_for_text("main", "The review is removed.")
        .await;
    assert!(browser.has("#queue-empty").await);
    browser.quit().await;
}
