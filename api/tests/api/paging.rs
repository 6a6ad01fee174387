//! The paging parameters and envelope, shown on the member list.

use reqwest::StatusCode;

use crate::app_tests;
use crate::helpers::TestApp;

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

app_tests!(
    out_of_range_paging_is_400_naming_the_parameter,
    pages_have_the_envelope
);
