//! Enums stored and shown as fixed texts, each declared once with `string_enum!`.

/// Declares an enum whose variants are stored and shown as fixed texts:
///
/// ```ignore
/// string_enum! {
///     /// Doc comment and derives, as on any enum.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum BatchState ("batch state") { Received = "received", Failed = "failed" }
/// }
/// ```
///
/// gives `ALL` (in declaration order), `as_str`, `parse` (the exact text, as stored),
/// `parse_any_case` (input from people: trimmed, in any letter case), `FromStr` (exact, its
/// error naming the known texts: "unknown batch state `x`; known: received, failed"),
/// `Display`, serde as the text, and binding as a statement argument.
#[macro_export]
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $($(#[$variant_meta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$variant_meta])* $variant),+
        }

        impl $name {
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The variant stored as `text`, exactly.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The variant `text` names, trimmed and in any letter case.
            pub fn parse_any_case(text: &str) -> Option<$name> {
                let text = text.trim();
                Self::ALL.into_iter().find(|v| v.as_str().eq_ignore_ascii_case(text))
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(text: &str) -> Result<Self, String> {
                Self::parse(text).ok_or_else(|| {
                    format!(
                        "unknown {} `{text}`; known: {}",
                        $what,
                        [$($text),+].join(", ")
                    )
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl $crate::backend::ToArg for $name {
            fn to_arg(&self) -> $crate::backend::Arg<'_> {
                $crate::backend::Arg::Text(Some(self.as_str()))
            }
            fn null() -> $crate::backend::Arg<'static> {
                $crate::backend::Arg::Text(None)
            }
        }
    };
}
