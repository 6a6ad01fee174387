//! Orders and bookings, as a client places and reads them.

use api::views::{LineView, OrderView};
use chrono::{Datelike, Duration, FixedOffset, TimeZone, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::{NewKey, Permission};

use super::{Credentials, Reply, TestApp};

/// A catalogue to order from: `dinner` (booked in advance on Fridays and Saturdays at two
/// branches; `dinner-std` at 25.5, `dinner-gold` for Gold wallets with 5 units), `mug` (one
/// variant at 3, 3 units), `balloon` (unavailable) and `poster` (weight 0).
pub fn order_catalogue() -> Value {
    json!({
        "tiers": [{"id": "gold", "name": "Gold", "precedence": 1, "threshold": 100}],
        "products": [
            {"id": "dinner", "name": "Dinner for two", "description": "Three courses",
             "primaryImage": "https://img.example/dinner.jpg", "weight": 3,
             "bookInAdvance": true, "weekdays": {"fri": true, "sat": true},
             "branches": [{"id": "cpt", "name": "Cape Town"}, {"id": "jhb", "name": "Johannesburg"}],
             "variants": [
                 {"id": "dinner-std", "name": "Standard", "price": 25.5, "description": "Set menu",
                  "offerDetails": "Wine included", "termsAndConditions": "Book 2 days ahead"},
                 {"id": "dinner-gold", "name": "Chef's table", "price": 80, "tier": "gold", "stock": 5}
             ]},
            {"id": "mug", "name": "Mug", "weight": 1,
             "variants": [{"id": "mug-1", "name": "Blue", "price": 3, "stock": 3}]},
            {"id": "balloon", "name": "Balloon flight",
             "variants": [{"id": "balloon-1", "name": "Sunrise", "price": 120, "available": false}]},
            {"id": "poster", "name": "Poster", "weight": 0,
             "variants": [{"id": "poster-1", "name": "A2", "price": 1}]}
        ]
    })
}

/// The next Friday at 19:00 in UTC+2, at least a week away, as RFC 3339.
pub fn next_friday() -> String {
    let zone = FixedOffset::east_opt(2 * 3600).unwrap();
    let mut day = Utc::now().with_timezone(&zone).date_naive() + Duration::days(7);
    while day.weekday() != chrono::Weekday::Fri {
        day = day.succ_opt().unwrap();
    }
    zone.from_local_datetime(&day.and_hms_opt(19, 0, 0).unwrap())
        .unwrap()
        .to_rfc3339()
}

/// An order's lines (as placed or read whole, never absent).
pub fn lines(order: &OrderView) -> &[LineView] {
    order.lines.as_deref().expect("the order's lines")
}

impl TestApp {
    /// The order catalogue imported and member `card-1` with wallet `w-1`.
    pub async fn ready_to_order(&self) {
        self.import_catalogue(order_catalogue()).await;
        self.member_with_wallet().await;
    }

    /// `POST /v1/orders` with `body`.
    pub async fn order(&self, body: Value) -> Reply {
        self.post("/v1/orders", body).await
    }

    /// Orders `lines` for `card-1` (it must succeed); the order.
    pub async fn place(&self, lines: Value) -> OrderView {
        let body = json!({"owner": "card-1", "lines": lines});
        self.order(body).await.expect(StatusCode::OK)
    }

    /// A key of the app's organisation that may redeem codes.
    pub async fn partner_key(&self) -> Credentials {
        let new = NewKey {
            permissions: vec![Permission::RedeemCodes],
            ..Default::default()
        };
        self.issue_key(&self.org, &self.campaign, new).await
    }

    /// `POST /v1/codes/redeem` of `code` as `key`.
    pub async fn redeem(&self, key: &Credentials, code: &str) -> Reply {
        let body = json!({"code": code});
        self.send(
            Method::POST,
            "/v1/codes/redeem",
            Some(key),
            None,
            Some(body),
        )
        .await
    }

    /// `PATCH /v1/bookings/{id}` with `body`.
    pub async fn patch_booking(&self, id: &str, body: Value) -> Reply {
        let path = format!("/v1/bookings/{id}");
        self.send(Method::PATCH, &path, Some(&self.key), None, Some(body))
            .await
    }
}
