//! `communicationPreferences` in each version's shape. 1.9.5 sends
//! `{"general": {"email": true, "sms": false}, ...}`, 1.6.2 sends
//! `{"general": {"channels": ["email"]}, ...}`; both read and write the one stored form.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{ApiVersion, ChannelsPatch, CommunicationPreferences, PreferencesPatch};
use utoipa::ToSchema;

use crate::error::FieldError;
use crate::json::field_error;

/// Channels of one category in version 1.9.5.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelFlags {
    email: Option<bool>,
    sms: Option<bool>,
}

/// Channels of one category in version 1.6.2: the channels the member accepts.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelList {
    channels: Vec<Channel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Email,
    Sms,
}

/// Preferences per category; `C` is the version's channel shape.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Preferences<C> {
    general: Option<C>,
    marketing: Option<C>,
    booking: Option<C>,
    earn: Option<C>,
    order: Option<C>,
}

impl<C> Preferences<C> {
    fn into_categories(self) -> [(&'static str, Option<C>); 5] {
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
        shape: impl Fn(store::Channels) -> C,
    ) -> Self {
        let [general, marketing, booking, earn, order] = stored
            .categories()
            .map(|(_, channels)| Some(shape(channels)));
        Preferences {
            general,
            marketing,
            booking,
            earn,
            order,
        }
    }
}

/// `communicationPreferences` in the request's version: 1.9.5 flags or 1.6.2 channel lists.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PreferencesBody {
    Flags(Preferences<ChannelFlags>),
    Lists(Preferences<ChannelList>),
}

impl PreferencesBody {
    pub fn render(stored: &CommunicationPreferences, version: ApiVersion) -> Self {
        match version {
            ApiVersion::V1_9_5 => {
                PreferencesBody::Flags(Preferences::from_stored(stored, |c| ChannelFlags {
                    email: Some(c.email),
                    sms: Some(c.sms),
                }))
            }
            ApiVersion::V1_6_2 => PreferencesBody::Lists(Preferences::from_stored(stored, |c| {
                let on = [(c.email, Channel::Email), (c.sms, Channel::Sms)];
                ChannelList {
                    channels: on
                        .into_iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, ch)| ch)
                        .collect(),
                }
            })),
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
        let changes = match version {
            ApiVersion::V1_9_5 => {
                let prefs: Preferences<ChannelFlags> = serde_path_to_error::deserialize(value)
                    .map_err(|e| {
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
                let prefs: Preferences<ChannelList> = serde_path_to_error::deserialize(value)
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
