//! Result rows as named structs, decoded the same way on every path.

/// Declares a row struct: `row_struct! { pub struct BatchRow { id: String, ... } }`.
/// Its fields decode by position, in the order of the SELECT's columns, from rusqlite's rows
/// (`direct::FromRow`) and sqlx's PostgreSQL rows, so one declaration serves both backends and a
/// field is read by its name, not by its place in a tuple.
#[macro_export]
macro_rules! row_struct {
    // The decoding from sqlx's PostgreSQL rows.
    (@sqlx $name:ident, $row:ty, $($field:ident),*) => {
        impl<'r> sqlx::FromRow<'r, $row> for $name {
            fn from_row(row: &'r $row) -> Result<Self, sqlx::Error> {
                use sqlx::Row as _;
                let mut index = 0usize..;
                // Field initialisers run in the order written: the columns' order.
                Ok($name { $($field: row.try_get(index.next().unwrap_or_default())?,)* })
            }
        }
    };
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$field_meta:meta])* $field:ident: $ty:ty),* $(,)?
    }) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        $crate::row_struct!(@sqlx $name, sqlx::postgres::PgRow, $($field),*);

        impl $crate::backend::direct::FromRow for $name {
            fn from_row(row: &rusqlite::Row) -> rusqlite::Result<Self> {
                let mut index = 0usize..;
                Ok($name {
                    $($field: <$ty as $crate::backend::direct::Column>::column(
                        row,
                        index.next().unwrap_or_default(),
                    )?,)*
                })
            }
        }
    };
}
