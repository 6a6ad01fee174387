//! Schemas the derive cannot say: a field's closed list of words.

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};

fn words(values: &[&'static str]) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
}

/// An operator's role.
pub fn role() -> ObjectBuilder {
    words(&["owner", "admin", "org-admin", "support", "viewer"])
}

/// An automation token's scopes: at least one.
pub fn scopes() -> ArrayBuilder {
    ArrayBuilder::new()
        .items(words(&[
            "read",
            "configure",
            "support",
            "service",
            "operators",
        ]))
        .min_items(Some(1))
        .max_items(Some(5))
}
