//! One delivery as it is sent: the event in the shapes of the endpoint's version, signed.

/// The request a delivery makes: its headers and its body.
pub struct Delivery {
    pub headers: Vec<(&'static str, String)>,
    pub body: hyper::body::Bytes,
}

impl Delivery {
    /// `event` as delivered to an endpoint pinned to `version`, signed with `secrets` at
    /// `timestamp` (Unix seconds).
    pub fn new<'a>(
        event: store::Event,
        version: store::ApiVersion,
        secrets: impl IntoIterator<Item = &'a str>,
        timestamp: i64,
    ) -> Result<Delivery, String> {
        let id = event.id.clone();
        let view = api::views::EventView::render(event, version)
            .map_err(|err| format!("the event could not be read: {err}"))?;
        let body = serde_json::to_vec(&view)
            .map_err(|err| format!("the event could not be written as JSON: {err}"))?;
        let signature = outbound::signature::header(secrets, &id, timestamp, &body);
        Ok(Delivery {
            headers: vec![
                ("webhook-id", id),
                ("webhook-timestamp", timestamp.to_string()),
                ("webhook-signature", signature),
            ],
            body: body.into(),
        })
    }
}
