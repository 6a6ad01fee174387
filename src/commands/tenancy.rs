//! `rewards org`, `rewards campaign` and `rewards key`: tenants, their programmes and API keys.

use serde_json::json;
use store::{ApiKey, NewCampaign, NewKey, Store};

use super::emit;
use crate::cli::{CampaignCommand, CampaignCreate, KeyCommand, KeyIssue, OrgCommand};

pub async fn org(store: &Store, command: OrgCommand, json: bool) -> anyhow::Result<()> {
    match command {
        OrgCommand::Create { name } => {
            let org = store.tenancy().create_org(&name).await?;
            emit(json, json!({"id": org.id, "name": org.name}), || {
                org.id.clone()
            });
        }
        OrgCommand::List => {
            let orgs = store.tenancy().list_orgs().await?;
            emit(json, serde_json::to_value(&orgs)?, || {
                orgs.iter()
                    .map(|o| format!("{}  {}", o.id, o.name))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
    }
    Ok(())
}

pub async fn campaign(store: &Store, command: CampaignCommand, json: bool) -> anyhow::Result<()> {
    match command {
        CampaignCommand::Create(CampaignCreate {
            org,
            name,
            currency,
            logo,
            favicon,
        }) => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let campaign = store
                .tenancy()
                .create_campaign(
                    &org,
                    NewCampaign {
                        name,
                        currency,
                        logo,
                        favicon,
                    },
                )
                .await?;
            emit(json, serde_json::to_value(&campaign)?, || {
                campaign.id.clone()
            });
        }
        CampaignCommand::Show { campaign } => {
            return super::ledger::show(store, &campaign, json).await;
        }
        CampaignCommand::Policy(args) => return super::ledger::policy(store, args, json).await,
        CampaignCommand::List { org } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let campaigns = store.tenancy().list_campaigns(&org).await?;
            emit(json, serde_json::to_value(&campaigns)?, || {
                campaigns
                    .iter()
                    .map(|c| format!("{}  {}  {}", c.id, c.currency, c.name))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
    }
    Ok(())
}

fn key_json(key: &ApiKey) -> serde_json::Value {
    json!({
        "id": key.id,
        "org": key.org_id,
        "campaignId": key.campaign_id,
        "apiKey": key.obfuscated(),
        "permissions": key.permissions.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "version": key.version.map(store::ApiVersion::as_str),
        "readOnly": key.read_only,
        "createdAt": key.created_at,
        "revokedAt": key.revoked_at,
    })
}

pub async fn key(store: &Store, command: KeyCommand, json: bool) -> anyhow::Result<()> {
    match command {
        KeyCommand::Issue(KeyIssue {
            org,
            campaign,
            allow,
            version,
            read_only,
        }) => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let new = NewKey {
                campaign_id: store
                    .tenancy()
                    .find_campaign(&campaign, Some(&org))
                    .await?
                    .id,
                permissions: allow,
                version,
                read_only,
            };
            let issued = store.tenancy().issue_key(&org, new).await?;
            let value = json!({
                "id": issued.key.id,
                "apiKey": issued.key.api_key,
                "apiSecret": issued.secret,
            });
            emit(json, value, || {
                format!(
                    "id:         {}\napiKey:     {}\napiSecret:  {}\n\
                     The secret is shown only now; store it safely.",
                    issued.key.id, issued.key.api_key, issued.secret
                )
            });
        }
        KeyCommand::List { org } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let keys = store.tenancy().list_keys(&org).await?;
            emit(json, keys.iter().map(key_json).collect(), || {
                keys.iter()
                    .map(|k| {
                        let state = if k.revoked_at.is_some() {
                            "revoked"
                        } else {
                            "active"
                        };
                        format!(
                            "{}  {}  campaign {}  {state}",
                            k.id,
                            k.obfuscated(),
                            k.campaign_id
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        KeyCommand::Revoke { key_id } => {
            let key = store.tenancy().revoke_key(&key_id).await?;
            emit(json, key_json(&key), || format!("revoked {}", key.id));
        }
    }
    Ok(())
}
