//! Roles: `owner` and `admin` act on every organisation (an owner on operators too); `org-admin`,
//! `support` and `viewer` act on the organisations they are granted only.

string_enum! {
    /// What an operator may do. The permission table (docs/operators.md) says which operations
    /// each role reaches.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Role ("role") {
        /// Everything, operators and the service's settings included.
        Owner = "owner",
        /// The configuration of every organisation; not operators.
        Admin = "admin",
        /// Its organisations' campaigns, keys, SFTP users, mappings, rules, policies, tiers,
        /// catalogue, webhooks and exports.
        OrgAdmin = "org-admin",
        /// Its organisations' members, wallets and history, adjustments within a limit, order
        /// cancellations, booking changes and review moderation.
        Support = "support",
        /// Reading its organisations' records, reports and exports.
        Viewer = "viewer",
    }
}

impl Role {
    /// Whether the role acts on the organisations it is granted only.
    pub fn per_organisation(self) -> bool {
        matches!(self, Role::OrgAdmin | Role::Support | Role::Viewer)
    }
}
