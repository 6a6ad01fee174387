//! `rewards webhook ...`: an organisation's webhook endpoints, as the API's `/v1/webhooks`
//! manages them, checked by the same address rules the service delivers under.

use anyhow::{Context, bail};
use chrono::Duration;
use outbound::signature::new_secret;
use serde_json::json;
use store::{EndpointPatch, EndpointStatus, NewEndpoint, Page, Redelivery, Store, WebhookEndpoint};

use super::emit;
use crate::cli::WebhookCommand;
use rewards::config::Config;

fn endpoint_json(e: &WebhookEndpoint) -> serde_json::Value {
    json!(api::views::EndpointView::from(e.clone()))
}

fn endpoint_line(e: &WebhookEndpoint) -> String {
    let types = match e.event_types.is_empty() {
        true => "every event".to_string(),
        false => e
            .event_types
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(","),
    };
    let campaign = e.campaign_id.as_deref().unwrap_or("every campaign");
    let reason = e
        .disabled_reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    // Enabled is not the same as delivering: an endpoint failing for hours says so.
    let status = match (e.status, e.failing_since) {
        (EndpointStatus::Enabled, Some(since)) => {
            format!("failing since {}", since.format("%Y-%m-%d %H:%M UTC"))
        }
        (status, _) => status.as_str().to_string(),
    };
    format!(
        "{}  {}  {}  {types}  {campaign}  {status}{reason}",
        e.id, e.url, e.api_version
    )
}

pub async fn run(
    config: &Config,
    store: &Store,
    command: WebhookCommand,
    json: bool,
) -> anyhow::Result<()> {
    let rules = &config.api.webhooks.rules;
    match command {
        WebhookCommand::Add {
            org,
            campaign,
            url,
            events,
            version,
            description,
        } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let campaign = match campaign {
                Some(campaign) => Some(
                    store
                        .tenancy()
                        .find_campaign(&campaign, Some(&org))
                        .await?
                        .id,
                ),
                None => None,
            };
            if let Err(why) = rules.check(&url).await {
                bail!(
                    "url: {why}. To deliver to a local or private receiver, allow it in the \
                     configuration: webhook_allow_http = true (REWARDS_WEBHOOK_ALLOW_HTTP) for \
                     http://, webhook_allow = [\"127.0.0.1\"] (REWARDS_WEBHOOK_ALLOW) for its \
                     address; a running service reads them when it starts"
                );
            }
            let secret = new_secret();
            let new = NewEndpoint {
                campaign_id: campaign,
                url,
                description,
                event_types: events,
                api_version: version,
                secret: secret.clone(),
            };
            let endpoint = store
                .events()
                .create_endpoint(
                    &org,
                    new,
                    &config.code_key()?,
                    config.api.webhooks.endpoints_per_org,
                )
                .await?;
            let mut value = endpoint_json(&endpoint);
            value["secret"] = json!(secret);
            emit(json, value, || {
                format!(
                    "{}\nsecret: {secret}\nThe secret is shown only now; give it to the receiver.",
                    endpoint_line(&endpoint)
                )
            });
        }
        WebhookCommand::List { org } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let page = Page {
                page: 1,
                limit: Page::MAX_LIMIT,
            };
            let mut all = Vec::new();
            for n in 1.. {
                let listed = store
                    .events()
                    .endpoints(&org, Page { page: n, ..page })
                    .await?;
                let last = listed.items.len() < page.limit as usize;
                all.extend(listed.items);
                if last {
                    break;
                }
            }
            emit(json, all.iter().map(endpoint_json).collect(), || {
                all.iter().map(endpoint_line).collect::<Vec<_>>().join("\n")
            });
        }
        WebhookCommand::Remove { org, endpoint } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            if !store.events().remove_endpoint(&org, &endpoint).await? {
                bail!("no endpoint {endpoint} in the organisation");
            }
            emit(json, json!({"removed": endpoint}), || {
                format!("removed {endpoint}")
            });
        }
        WebhookCommand::Enable { org, endpoint } => {
            set_status(store, &org, &endpoint, EndpointStatus::Enabled, json).await?;
        }
        WebhookCommand::Disable { org, endpoint } => {
            set_status(store, &org, &endpoint, EndpointStatus::Disabled, json).await?;
        }
        WebhookCommand::RotateSecret {
            org,
            endpoint,
            keep_previous_hours,
        } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let secret = new_secret();
            let until = (keep_previous_hours > 0)
                .then(|| store.now() + Duration::hours(i64::from(keep_previous_hours)));
            let rotated = store
                .events()
                .rotate_endpoint_secret(&org, &endpoint, &secret, until, &config.code_key()?)
                .await?;
            let mut value = endpoint_json(&rotated);
            value["secret"] = json!(secret);
            emit(json, value, || {
                let window = match rotated.previous_until {
                    Some(until) => format!("the old secret signs beside it until {until}"),
                    None => "the old secret no longer signs".into(),
                };
                format!("secret: {secret}\n{window}")
            });
        }
        WebhookCommand::Test { org, endpoint } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let event = store
                .events()
                .send_test_event(&org, &endpoint, config.api.webhooks.manual)
                .await?;
            emit(json, json!({"eventId": event, "deliveries": 1}), || {
                format!("test event {event} queued for {endpoint}")
            });
        }
        WebhookCommand::Attempts {
            org,
            endpoint,
            limit,
        } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let page = Page { page: 1, limit };
            let log = store
                .events()
                .delivery_attempts(&org, &endpoint, page)
                .await?;
            let views: Vec<api::views::AttemptView> =
                log.items.into_iter().map(Into::into).collect();
            emit(json, json!(views), || {
                views
                    .iter()
                    .map(|a| {
                        let status = a.status_code.map_or("-".into(), |s| s.to_string());
                        let response = a.response.as_deref().unwrap_or_default();
                        let response: String = response.chars().take(80).collect();
                        format!(
                            "{}  {}  {}  {status}  {} ms  {}  {response}",
                            a.attempted_at,
                            a.event_id,
                            a.event_type,
                            a.latency_ms,
                            a.delivery_status
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        WebhookCommand::Redeliver {
            org,
            endpoint,
            event,
            from,
            to,
        } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let which = match (event, from, to) {
                (Some(id), _, _) => Redelivery::Event(id),
                (None, Some(from), Some(to)) if from < to => Redelivery::Range { from, to },
                _ => bail!("give --event, or --from and --to (from before to)"),
            };
            let made = store
                .events()
                .redeliver(&org, &endpoint, which, config.api.webhooks.manual)
                .await
                .context("redelivering")?;
            emit(json, json!({"deliveries": made}), || {
                format!("{made} deliveries queued")
            });
        }
    }
    Ok(())
}

async fn set_status(
    store: &Store,
    org: &str,
    endpoint: &str,
    status: EndpointStatus,
    json: bool,
) -> anyhow::Result<()> {
    let org = store.tenancy().find_org(org).await?.scope();
    let patch = EndpointPatch {
        status: Some(status),
        ..Default::default()
    };
    let endpoint = store
        .events()
        .update_endpoint(&org, endpoint, patch)
        .await?;
    emit(json, endpoint_json(&endpoint), || endpoint_line(&endpoint));
    Ok(())
}
