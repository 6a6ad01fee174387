//! The paging parameters and envelope, shown on the member list, and strict query strings.

use reqwest::StatusCode;
use serde_json::json;

use crate::app_tests;
use crate::helpers::{TestApp, small_catalogue};

async fn out_of_range_paging_is_400_naming_the_parameter(app: TestApp) {
    for (query, field) in [
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=abc", "page"),
        ("limit=101", "limit"),
        ("limit=-1", "limit"),
        ("limit=1.5", "limit"),
    ] {
        let reply = app.get(&format!("/v1/members?{query}")).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(reply.body["field"], field, "{query}: {}", reply.body);
    }
    let both = app.get("/v1/members?page=0&limit=101").await;
    assert_eq!(
        both.fields().len(),
        2,
        "every bad parameter is reported: {}",
        both.body
    );
}

async fn pages_have_the_envelope(app: TestApp) {
    for i in 0..12 {
        app.create_member(&format!("card-{i:02}")).await;
    }
    let first = app.get("/v1/members").await;
    assert_eq!(first.data().len(), 10, "default limit is 10");
    assert_eq!(first.body["currentPage"], 1);
    assert_eq!(first.body["pageSize"], 10);
    assert_eq!(first.body["total"], 12);
    assert_eq!(first.body["totalPages"], 2);

    let second = app.get("/v1/members?page=2&limit=10").await;
    let ids: Vec<_> = second
        .data()
        .iter()
        .map(|m| m["externalId"].clone())
        .collect();
    assert_eq!(ids, ["card-10", "card-11"]);

    let count = app.get("/v1/members?limit=0").await;
    assert_eq!(count.status, StatusCode::OK);
    assert_eq!(count.data().len(), 0);
    assert_eq!(count.body["total"], 12);
    assert_eq!(count.body["pageSize"], 0);

    let max = app.get("/v1/members?limit=100").await;
    assert_eq!(max.data().len(), 12);
    let past_the_end = app.get("/v1/members?page=5").await;
    assert_eq!(past_the_end.status, StatusCode::OK);
    assert_eq!(past_the_end.data().len(), 0);
}

/// A typo in a filter must never widen a result: every operation takes only its own
/// parameters.
async fn a_parameter_an_operation_does_not_take_is_400(app: TestApp) {
    let wallet = app.member_with_wallet().await;
    app.earn("e-1", &wallet, json!(50)).await;
    let burned = app.burn("b-1", &wallet, json!(5)).await;
    assert_eq!(burned.status, StatusCode::OK, "{}", burned.body);
    app.import_catalogue(small_catalogue()).await;

    let typo = app.get("/v1/transactions?walletid=nope").await;
    assert_eq!(typo.status, StatusCode::BAD_REQUEST, "{}", typo.body);
    assert_eq!(typo.fields(), ["walletid"]);
    assert_eq!(typo.body["errors"][0]["code"], "unknown_parameter");
    let message = typo.body["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("did you mean `walletId`"), "{message}");
    for path in [
        "/v1/products?colour=red",
        "/v1/api-key?verbose=1",
        "/v1/members?page=1&page=2",
        "/v1/wallets?limit=1&limit=1",
    ] {
        let reply = app.get(path).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            reply.body
        );
        assert_eq!(reply.fields().len(), 1, "{path}: {}", reply.body);
    }
    let body = json!({"firstName": "Ada", "userId": "u-2", "externalId": "card-2"});
    let create = app.post("/v1/members?dryRun=true", body).await;
    assert_eq!(create.status, StatusCode::BAD_REQUEST, "{}", create.body);
    assert_eq!(create.fields(), ["dryRun"]);
    assert_eq!(
        app.get("/v1/members").await.body["total"],
        1,
        "nothing was created"
    );

    // The bracket form of a list, and the list repeated, filter as `type=` does.
    for query in ["type[]=BURN", "type=BURN", "type=BURN&type=BURN"] {
        let burns = app.transactions(query).await;
        let kinds: Vec<_> = burns.data.iter().map(|t| &*t.kind).collect();
        assert_eq!(kinds, ["BURN"], "{query}");
    }
    let both = app.transactions("type[]=BURN&type[]=EARN").await;
    assert_eq!(both.total, 2);
    // Known parameters still work.
    let of_wallet = app.transactions(&format!("walletId={wallet}")).await;
    assert_eq!(of_wallet.total, 2);
}

app_tests!(
    out_of_range_paging_is_400_naming_the_parameter,
    pages_have_the_envelope,
    a_parameter_an_operation_does_not_take_is_400,
);
