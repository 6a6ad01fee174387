//! One OpenAPI document per interface version, served at `/openapi.json?version=...`.
//!
//! The routes are described once, from the handlers' own types, in version 1.9.5's shapes with
//! 1.6.2's shapes registered beside them (`ListPreferences`, the wrapped wallet list, Update
//! Member's `externalId`). Each version's document is that description with the other
//! version's parts taken out, following the seed's list of differences (its *Versioning*):
//! 1.6.2 has no `minCost`/`maxCost`, `acrossCampaigns` or Decrypt's `ownerId`, no `product` on
//! order lines, preference channel lists instead of flags, may change a member's `externalId`,
//! has no `ownerId` wallet filter, and wraps the wallet list in an array.

use serde_json::{Value, json};
use store::ApiVersion;
use utoipa::openapi::OpenApi;

use crate::http::auth::API_VERSION;

/// Query parameters version 1.6.2 does not have: (path, parameters).
const NEWER_PARAMETERS: [(&str, &[&str]); 5] = [
    ("/v1/products", &["minCost", "maxCost"]),
    ("/v1/orders", &["acrossCampaigns"]),
    ("/v1/orders/{id}", &["acrossCampaigns"]),
    (
        "/v1/orders/{id}/lines/{lineId}",
        &["acrossCampaigns", "ownerId"],
    ),
    ("/v1/wallets", &["ownerId"]),
];

const FLAGS: &str = "#/components/schemas/FlagPreferences";
const LISTS: &str = "#/components/schemas/ListPreferences";
/// The version header's name among the document's parameters, and its value's among its schemas.
const VERSION_PARAMETER: &str = "InterfaceVersion";
const WALLET_PAGE: &str = "#/components/schemas/PagedList_WalletView";

/// Each version's document, as served.
pub struct Documents {
    pub v1_9_5: String,
    pub v1_6_2: String,
}

impl Documents {
    /// From `api`, the description of every route (see the module's description).
    pub fn of(api: &OpenApi) -> Documents {
        let mut full = serde_json::to_value(api).expect("the OpenAPI document serialises");
        crate::http::checks::schema::meta_bounds(&mut full);
        crate::http::shapes::share_schemas(&mut full);
        crate::http::shapes::describe_responses(&mut full);
        let text = |version| {
            serde_json::to_string(&document(&full, version)).expect("a JSON value serialises")
        };
        Documents {
            v1_9_5: text(ApiVersion::V1_9_5),
            v1_6_2: text(ApiVersion::V1_6_2),
        }
    }

    pub fn get(&self, version: ApiVersion) -> &str {
        match version {
            ApiVersion::V1_9_5 => &self.v1_9_5,
            ApiVersion::V1_6_2 => &self.v1_6_2,
        }
    }
}

/// `full` as version `version` speaks it.
pub fn document(full: &Value, version: ApiVersion) -> Value {
    let mut api = full.clone();
    api["info"]["version"] = json!(version.as_str());
    pin_version_header(&mut api, version);
    let schemas = &mut api["components"]["schemas"];
    match version {
        ApiVersion::V1_9_5 => {
            schemas["WalletList"] = json!({"$ref": WALLET_PAGE});
            if let Some(line) = schemas["LineView"].as_object_mut() {
                line["properties"]["product"] =
                    json!({"$ref": "#/components/schemas/ProductSummaryView"});
                push_required(line, "product");
            }
            remove_schema(&mut api, "ListPreferences");
        }
        ApiVersion::V1_6_2 => {
            schemas["WalletList"] = json!({
                "type": "array", "items": {"$ref": WALLET_PAGE}, "minItems": 1, "maxItems": 1,
                "description": "The page of wallets, wrapped in an array (version 1.6.2)."
            });
            if let Some(line) = schemas["LineView"]["properties"].as_object_mut() {
                line.remove("product");
            }
            let external_id = serde_json::to_value(crate::http::checks::schema::id_or_null())
                .expect("a schema serialises");
            schemas["MemberUpdate"]["properties"]["externalId"] = external_id;
            replace_refs(&mut api, FLAGS, LISTS);
            remove_schema(&mut api, "FlagPreferences");
            remove_schema(&mut api, "ChannelFlags");
            for (path, names) in NEWER_PARAMETERS {
                if let Some(parameters) = api["paths"][path]["get"]["parameters"].as_array_mut() {
                    parameters.retain(|p| {
                        !(p["in"] == "query" && names.iter().any(|name| p["name"] == *name))
                    });
                }
            }
        }
    }
    api
}

/// The version header: one parameter of the document's own (`InterfaceVersion`), naming only
/// `version`, required so that a client generated from this document always says which version
/// it speaks (the service still answers a request without it in the key's default, as it did
/// before versions were pinned: 1.9.5 unless the key pins another).
fn pin_version_header(api: &mut Value, version: ApiVersion) {
    let reference = json!({"$ref": format!("#/components/parameters/{VERSION_PARAMETER}")});
    let Some(paths) = api["paths"].as_object_mut() else {
        return;
    };
    for operation in paths.values_mut().filter_map(Value::as_object_mut) {
        for operation in operation.values_mut() {
            let Some(parameters) = operation["parameters"].as_array_mut() else {
                continue;
            };
            for parameter in parameters.iter_mut() {
                if parameter["in"] == "header" && parameter["name"] == API_VERSION {
                    *parameter = reference.clone();
                }
            }
        }
    }
    api["components"]["parameters"][VERSION_PARAMETER] = json!({
        "name": API_VERSION,
        "in": "header",
        "required": true,
        "description": format!(
            "Interface version {version}: this document describes it and no other. A request \
             without the header is answered in the key's default version."
        ),
        "schema": {"$ref": format!("#/components/schemas/{VERSION_PARAMETER}")},
    });
    // A schema of its own, so that a generated client has one type for it, not one per operation.
    api["components"]["schemas"][VERSION_PARAMETER] = json!({
        "type": "string",
        "enum": [version.as_str()],
        "description": format!("Interface version {version}."),
    });
}

fn push_required(schema: &mut serde_json::Map<String, Value>, field: &str) {
    let required = schema.entry("required").or_insert_with(|| json!([]));
    if let Some(list) = required.as_array_mut()
        && !list.iter().any(|f| f == field)
    {
        list.push(json!(field));
    }
}

/// Every `$ref` to `from` made a `$ref` to `to`.
fn replace_refs(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(map) => {
            if map.get("$ref").is_some_and(|r| r == from) {
                map.insert("$ref".into(), json!(to));
            }
            map.values_mut().for_each(|v| replace_refs(v, from, to));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_refs(v, from, to)),
        _ => {}
    }
}

fn remove_schema(api: &mut Value, name: &str) {
    if let Some(schemas) = api["components"]["schemas"].as_object_mut() {
        schemas.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part the versions differ in exists in the description they are cut from, so a
    /// renamed schema or parameter cannot silently leave a version's document wrong.
    #[test]
    fn every_difference_names_something_described() {
        let full = serde_json::to_value(crate::openapi()).unwrap();
        let schemas = &full["components"]["schemas"];
        for name in [
            "WalletList",
            "LineView",
            "MemberUpdate",
            "FlagPreferences",
            "ListPreferences",
            "ChannelFlags",
            "ProductSummaryView",
            "PagedList_WalletView",
        ] {
            assert!(schemas.get(name).is_some(), "schema {name}");
        }
        assert!(schemas["LineView"]["properties"].get("product").is_some());
        for (path, names) in NEWER_PARAMETERS {
            let parameters = full["paths"][path]["get"]["parameters"].as_array().unwrap();
            for name in names {
                assert!(
                    parameters
                        .iter()
                        .any(|p| p["name"] == *name && p["in"] == "query"),
                    "{path} {name}"
                );
            }
        }
        let text = full.to_string();
        assert!(text.contains(FLAGS));
    }
}
