//! `communicationPreferences` in each version's shape. 1.9.5 sends
//! `{"general": {"email": true, "sms": false}, ...}`, 1.6.2 sends
//! `{"general": {"channels": ["email"]}, ...}`; both read and write the one stored form.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{ApiVersion, ChannelsPatch, CommunicationPreferences, PreferencesPatch};
use utoipa::ToSchema;

use crate::http::error::FieldError;
use crate::http::json::field_error;

/// Channels of one category in version 1.9.5.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelFlags {
    pub email: Option<bool>,
    pub sms: Option<bool>,
}

/// Channels of one category in version 1.6.2: the channels the member accepts.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelList {
    pub channels: Vec<Channel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Email,
    Sms,
}

/// Preferences per category in one version's channel shape. Two concrete types rather than one
/// generic, so that each has a schema of its own name in the OpenAPI document.
macro_rules! preferences {
    ($(#[$doc:meta])* $name:ident($channels:ty)) => {
        $(#[$doc])*
        #[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            pub general: Option<$channels>,
            pub marketing: Option<$channels>,
            pub booking: Option<$channels>,
            pub earn: Option<$channels>,
            pub order: Option<$channels>,
        }

        impl $name {
            fn into_categories(self) -> [(&'static str, Option<$channels>); 5] {
                [
                    ("general", self.general),
                    ("marketing", self.marketing),
                    ("booking", self.booking),
                    ("earn", self.earn),
                    ("order", self.order),
                ]
            }

            fn from_stored(
                stored: &CommunicationPreferences,
                shape: impl Fn(store::Channels) -> $channels,
            ) -> Self {
                let [general, marketing, booking, earn, order] = stored
                    .categories()
                    .map(|(_, channels)| Some(shape(channels)));
                $name {
                    general,
                    marketing,
                    booking,
                    earn,
                    order,
                }
            }
        }
    };
}

preferences!(
    /// Version 1.9.5: `{"general": {"email": true, "sms": false}, ...}`.
    FlagPreferences(ChannelFlags)
);
preferences!(
    /// Version 1.6.2: `{"general": {"channels": ["email"]}, ...}`.
    ListPreferences(ChannelList)
);

/// `communicationPreferences` in the request's version: 1.9.5 flags or 1.6.2 channel lists.
/// The OpenAPI document describes version 1.9.5 (the default) and names 1.6.2's shape in words.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PreferencesBody {
    Flags(FlagPreferences),
    Lists(ListPreferences),
}

impl PreferencesBody {
    pub fn render(stored: &CommunicationPreferences, version: ApiVersion) -> Self {
        match version {
            ApiVersion::V1_9_5 => {
                PreferencesBody::Flags(FlagPreferences::from_stored(stored, |c| ChannelFlags {
                    email: Some(c.email),
                    sms: Some(c.sms),
                }))
            }
            ApiVersion::V1_6_2 => {
                PreferencesBody::Lists(ListPreferences::from_stored(stored, |c| {
                    let on = [(c.email, Channel::Email), (c.sms, Channel::Sms)];
                    ChannelList {
                        channels: on
                            .into_iter()
                            .filter(|(on, _)| *on)
                            .map(|(_, ch)| ch)
                            .collect(),
                    }
                }))
            }
        }
    }

    /// Reads the body's preferences in `version`'s shape into a change to the stored ones.
    pub fn parse(value: Value, version: ApiVersion) -> Result<PreferencesPatch, FieldError> {
        const FIELD: &str = "communicationPreferences";
        // `other_shape` names the keys of the other version's shape, to point a client that
        // mixed them up at the version header.
        let fail = |err: serde_path_to_error::Error<serde_json::Error>,
                    other_shape: &[&str],
                    hint: &str| {
            let path = match err.path().to_string().as_str() {
                "." => FIELD.to_string(),
                inner => format!("{FIELD}.{inner}"),
            };
            let mut error = field_error(&path, &err.into_inner().to_string());
            if other_shape
                .iter()
                .any(|key| error.message.starts_with(&format!("unknown field `{key}`")))
            {
                error.message.push_str(hint);
            }
            error
        };
        // serde reads a struct from an array too (`[true, false]`); the shapes are objects.
        let objects = match &value {
            Value::Object(categories) => categories
                .iter()
                .find(|(_, c)| !(c.is_object() || c.is_null()))
                .map(|(name, _)| format!("{FIELD}.{name}")),
            _ => Some(FIELD.to_string()),
        };
        if let Some(path) = objects {
            return Err(FieldError::new(
                path,
                "invalid_type",
                "must be a JSON object",
            ));
        }
        let changes = match version {
            ApiVersion::V1_9_5 => {
                let prefs: FlagPreferences =
                    serde_path_to_error::deserialize(value).map_err(|e| {
                        fail(
                            e,
                            &["channels"],
                            " (`channels` lists are the 1.6.2 shape; send `x-api-version: 1.6.2`)",
                        )
                    })?;
                prefs
                    .into_categories()
                    .into_iter()
                    .filter_map(|(name, c)| {
                        c.map(|c| {
                            (
                                name,
                                ChannelsPatch {
                                    email: c.email,
                                    sms: c.sms,
                                },
                            )
                        })
                    })
                    .collect()
            }
            ApiVersion::V1_6_2 => {
                let prefs: ListPreferences = serde_path_to_error::deserialize(value)
                    .map_err(|e| {
                        fail(e, &["email", "sms"], " (`email`/`sms` flags are the 1.9.5 shape; send `x-api-version: 1.9.5`)")
                    })?;
                prefs
                    .into_categories()
                    .into_iter()
                    .filter_map(|(name, c)| {
                        c.map(|c| {
                            let has = |ch| Some(c.channels.contains(&ch));
                            (
                                name,
                                ChannelsPatch {
                                    email: has(Channel::Email),
                                    sms: has(Channel::Sms),
                                },
                            )
                        })
                    })
                    .collect()
            }
        };
        Ok(PreferencesPatch(changes))
    }
}
