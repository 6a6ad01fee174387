//! The versions of the HTTP interface. A request names one in `x-api-version`; a key may pin
//! the version its requests default to.

string_enum! {
    /// A version of the HTTP interface. A key may pin the version its requests default to.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum ApiVersion ("API version") {
        V1_6_2 = "1.6.2",
        #[default]
        V1_9_5 = "1.9.5",
    }
}
