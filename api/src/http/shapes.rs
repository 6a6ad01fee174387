//! The last touches that make the generated description one a client generator reads as meant:
//! every response described, and each resource's schema named once and referenced wherever it
//! appears (utoipa writes a generic's argument, such as a page's item, inline).

use serde_json::{Map, Value, json};

/// Declares `$marker`, a type that stands for a closed set of texts in the document: a named
/// enum schema (`$name`, described as `$description`) of `$values`, for a field shown as one of
/// them (`#[schema(value_type = $marker)]`), so that a generated client has one enum type for it.
macro_rules! named_enum {
    ($marker:ident, $name:literal, $description:literal, $values:expr) => {
        #[doc = $description]
        pub struct $marker;

        impl utoipa::PartialSchema for $marker {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some($values))
                    .description(Some($description))
                    .into()
            }
        }

        impl utoipa::ToSchema for $marker {
            fn name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }
        }
    };
}
pub(crate) use named_enum;

/// Gives each response that has no description one made from its status and its body.
pub fn describe_responses(api: &mut Value) {
    let Some(paths) = api["paths"].as_object_mut() else {
        return;
    };
    for operation in paths.values_mut().filter_map(Value::as_object_mut) {
        for operation in operation.values_mut() {
            let Some(responses) = operation["responses"].as_object_mut() else {
                continue;
            };
            for (status, response) in responses.iter_mut() {
                let Some(response) = response.as_object_mut() else {
                    continue;
                };
                let missing = response
                    .get("description")
                    .and_then(Value::as_str)
                    .is_none_or(|d| d.trim().is_empty());
                if missing {
                    let text = description(status, body_schema(response));
                    response.insert("description".into(), json!(text));
                }
            }
        }
    }
}

/// The name of the schema a response's body refers to, if it refers to one.
fn body_schema(response: &Map<String, Value>) -> Option<&str> {
    let content = response.get("content")?.as_object()?;
    let (_, media) = content.iter().next()?;
    media["schema"]["$ref"]
        .as_str()?
        .strip_prefix("#/components/schemas/")
}

fn description(status: &str, schema: Option<&str>) -> String {
    let what = schema.map(noun);
    match (status, what) {
        ("200", Some(what)) => capitalised(&what),
        ("200", None) => "Done.".into(),
        ("201", Some(what)) => format!("Created: {what}."),
        ("201", None) => "Created.".into(),
        ("202", Some(what)) => format!("Accepted for processing: {what}."),
        ("202", None) => "Accepted for processing.".into(),
        ("204", _) => "Done; no body.".into(),
        ("400", _) => {
            "A parameter or the body is invalid: `field` names it, `code` says why.".into()
        }
        ("402", _) => "The wallet's balance does not cover the tokens asked for.".into(),
        ("404", _) => "What the path names does not exist in the key's organisation (or, where \
            it belongs to one, campaign)."
            .into(),
        ("409", _) => "Conflicts with what exists: `code` says how.".into(),
        ("410", _) => "Gone: no longer available.".into(),
        ("413", _) => "The body is larger than the service accepts.".into(),
        ("415", _) => "The body is not sent as JSON.".into(),
        ("429", _) => "Too many requests: try again later.".into(),
        ("503", _) => "The service cannot take this now: try again later.".into(),
        (other, _) => format!("Answered with status {other}."),
    }
}

/// `PagedList_LeaderboardEntry` -> "one page of leaderboard entries"; `TransactionView` -> "the
/// transaction".
fn noun(schema: &str) -> String {
    if let Some(item) = schema.strip_prefix("PagedList_") {
        return format!("one page of {}", plural(&words(item)));
    }
    format!("the {}", words(schema))
}

/// A schema's name as lower-case words, without a `View` at its end.
fn words(name: &str) -> String {
    let name = name.strip_suffix("View").unwrap_or(name);
    let mut out = String::new();
    for (n, c) in name.chars().enumerate() {
        if c.is_uppercase() && n > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

fn plural(words: &str) -> String {
    if let Some(stem) = words.strip_suffix('y') {
        format!("{stem}ies")
    } else if words.ends_with("ch") || words.ends_with('s') {
        format!("{words}es")
    } else {
        format!("{words}s")
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// Replaces every inline copy of a named object schema (one with properties) by a reference to
/// it, so that a generator makes one type per resource, not one per place it appears.
pub fn share_schemas(api: &mut Value) {
    let named: Vec<(String, Value)> = api["components"]["schemas"]
        .as_object()
        .map(|schemas| {
            schemas
                .iter()
                .filter(|(_, schema)| schema.get("properties").is_some())
                .map(|(name, schema)| (name.clone(), schema.clone()))
                .collect()
        })
        .unwrap_or_default();
    let refer = |value: &mut Value| refer_to_named(value, &named);
    if let Some(paths) = api.get_mut("paths") {
        refer(paths);
    }
    if let Some(schemas) = api["components"]["schemas"].as_object_mut() {
        // A named schema's own top level stays; what it holds is shared.
        for schema in schemas.values_mut() {
            if let Some(fields) = schema.as_object_mut() {
                fields.values_mut().for_each(refer);
            }
        }
    }
}

fn refer_to_named(value: &mut Value, named: &[(String, Value)]) {
    if value.get("properties").is_some()
        && let Some((name, _)) = named.iter().find(|(_, schema)| schema == value)
    {
        *value = json!({ "$ref": format!("#/components/schemas/{name}") });
        return;
    }
    match value {
        Value::Object(fields) => fields.values_mut().for_each(|v| refer_to_named(v, named)),
        Value::Array(items) => items.iter_mut().for_each(|v| refer_to_named(v, named)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_the_body() {
        assert_eq!(
            description("200", Some("TransactionView")),
            "The transaction."
        );
        assert_eq!(
            description("200", Some("PagedList_LeaderboardEntry")),
            "One page of leaderboard entries."
        );
        assert_eq!(
            description("201", Some("PagedList_BatchView")),
            "Created: one page of batches."
        );
        assert_eq!(
            description("202", Some("EarnAccepted")),
            "Accepted for processing: the earn accepted."
        );
    }

    #[test]
    fn copies_become_references_and_the_original_stays() {
        let item = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        let mut api = json!({
            "paths": {"/x": {"get": {"responses": {"200": {"content": {"application/json":
                {"schema": {"type": "array", "items": item.clone()}}}}}}}},
            "components": {"schemas": {
                "Item": item.clone(),
                "Page": {"type": "object", "properties": {"data": {"type": "array", "items": item}}}
            }}
        });
        share_schemas(&mut api);
        let reference = json!({"$ref": "#/components/schemas/Item"});
        assert_eq!(
            api["paths"]["/x"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
                ["items"],
            reference
        );
        assert_eq!(
            api["components"]["schemas"]["Page"]["properties"]["data"]["items"],
            reference
        );
        assert!(api["components"]["schemas"]["Item"]["properties"].is_object());
    }
}
