//! Schemas the derive cannot say (a field's closed list of words), and how a field that may be
//! `null` is told apart from one left out.

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

/// A present field, `null` or not: told apart from an absent one (`None`), for changes where a
/// field left out keeps its value and `null` clears it.
pub fn present<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

/// A field that may be left out but, when given, is not `null` (its schema is not nullable):
/// `null` is refused as a value of the wrong type, naming the field.
pub fn not_null<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A file's bytes, as a body or an answer (XLSX, Parquet).
pub struct FileBytes;

impl utoipa::PartialSchema for FileBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, SchemaFormat};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl utoipa::ToSchema for FileBytes {}
