//! The body every request that spends a wallet's tokens shares (a burn, a hold): its fields,
//! declared once (`spend_body!`), and their one check, which makes the store's `Spend`.

use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

/// The most tokens one spend may take: a wallet holds at most `Tokens::MAX`, a trillion.
pub(crate) const MAX_BURN: i64 = 1_000_000_000_000;
/// Tokens have at most 6 decimals.
pub(crate) const TOKEN_STEP: f64 = 0.000_001;

pub(crate) fn burn_amount() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
        .maximum(Some(MAX_BURN))
        .multiple_of(Some(TOKEN_STEP))
        .description(Some("Tokens to spend: more than 0, at most 6 decimals."))
        .build()
}

/// Declares a spend request's body: the fields every spend has, then its own; and `spend`, the
/// shared fields checked into the store's `Spend`.
macro_rules! spend_body {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            /// The wallet's id or external reference.
            #[schema(schema_with = $crate::http::checks::schema::id, required = true)]
            wallet_id: Option<String>,
            #[schema(schema_with = $crate::http::checks::schema::id, required = true)]
            external_id: Option<String>,
            #[schema(schema_with = $crate::spends::burn_amount, required = true)]
            amount: Option<serde_json::Number>,
            #[schema(schema_with = $crate::http::checks::schema::text_required, required = true)]
            description: Option<String>,
            #[schema(schema_with = $crate::http::checks::schema::text_or_null)]
            comment: Option<String>,
            #[schema(schema_with = $crate::http::checks::schema::meta)]
            meta: Option<serde_json::Value>,
            $($(#[$field_meta])* $field: $ty,)*
        }

        impl $name {
            /// The fields every spend has, checked; their problems are recorded in `checks`.
            fn spend(&mut self, checks: &mut $crate::http::checks::Checks) -> store::Spend {
                use $crate::http::checks::MAX_TEXT;
                let amount = checks.required_tokens(
                    "amount",
                    self.amount.take(),
                    $crate::http::checks::Sign::Positive,
                    $crate::spends::MAX_BURN,
                );
                store::Spend {
                    wallet: checks.required_id("walletId", self.wallet_id.take()),
                    external_id: checks.required_id("externalId", self.external_id.take()),
                    amount,
                    description: checks.required("description", self.description.take(), MAX_TEXT),
                    comment: checks.text("comment", self.comment.take(), MAX_TEXT),
                    meta: checks.meta(self.meta.take()),
                }
            }
        }
    };
}
pub(crate) use spend_body;
