//! The permission table: what each operation of the admin API needs, and which roles have it.
//! It is enforced in one place (`auth::authenticate`, before any handler runs): an operation a
//! role may not use answers 403, and `GET /admin/v1/me` lists only the operations it may.
//! docs/operators.md shows the same table (a test keeps the two equal).

use store::Role;

/// What an operation needs of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// Nothing: signing in.
    Open,
    /// A signed-in operator's own account, through a session (an automation token may not):
    /// its password, second factor and sessions, and signing out. Allowed before the one-time
    /// password is changed or the required second factor enrolled.
    Account,
    /// A signed-in operator's automation tokens, through a session.
    Session,
    /// Any signed-in operator or token: who it is.
    Own,
    /// Reading an organisation's records, reports and exports (every role, in its
    /// organisations).
    Read,
    /// An organisation's configuration: campaigns, keys, SFTP users, mappings, rules,
    /// policies, tiers, catalogue, webhooks, exports.
    Configure,
    /// Members and wallets: adjustments, cancellations, booking changes, moderation.
    Support,
    /// Creating organisations, and the service-wide audit trail.
    Service,
    /// Operators and the service's sign-in settings.
    Operators,
}

impl Need {
    /// Every need, in the order of the docs' table.
    pub const ALL: [Need; 9] = [
        Need::Open,
        Need::Account,
        Need::Session,
        Need::Own,
        Need::Read,
        Need::Configure,
        Need::Support,
        Need::Service,
        Need::Operators,
    ];

    /// Whether `role` has this need.
    pub fn allows(self, role: Role) -> bool {
        match self {
            Need::Open | Need::Account | Need::Session | Need::Own | Need::Read => true,
            Need::Configure => matches!(role, Role::Owner | Role::Admin | Role::OrgAdmin),
            Need::Support => matches!(role, Role::Owner | Role::Support),
            Need::Service => matches!(role, Role::Owner | Role::Admin),
            Need::Operators => role == Role::Owner,
        }
    }

    /// Its name, as an automation token's scope lists it.
    pub fn as_str(self) -> &'static str {
        match self {
            Need::Open => "open",
            Need::Account => "account",
            Need::Session => "session",
            Need::Own => "own",
            Need::Read => "read",
            Need::Configure => "configure",
            Need::Support => "support",
            Need::Service => "service",
            Need::Operators => "operators",
        }
    }

    /// The scopes an automation token may carry: what it may do beyond saying who it is.
    pub const SCOPES: [Need; 5] = [
        Need::Read,
        Need::Configure,
        Need::Support,
        Need::Service,
        Need::Operators,
    ];

    pub fn scope(name: &str) -> Option<Need> {
        Need::SCOPES.into_iter().find(|need| need.as_str() == name)
    }
}

/// Every operation of the admin API (its OpenAPI `operationId`) and what it needs. A test
/// checks that the document's operations and this table are the same.
pub const OPERATIONS: &[(&str, Need)] = &[
    ("sign_in", Need::Open),
    ("sign_out", Need::Account),
    ("list_sessions", Need::Account),
    ("revoke_session", Need::Account),
    ("change_password", Need::Account),
    ("begin_two_factor", Need::Account),
    ("confirm_two_factor", Need::Account),
    ("list_tokens", Need::Session),
    ("create_token", Need::Session),
    ("revoke_token", Need::Session),
    ("me", Need::Own),
    ("list_orgs", Need::Read),
    ("get_org", Need::Read),
    ("list_campaigns", Need::Read),
    ("get_campaign", Need::Read),
    ("campaign_overview", Need::Read),
    ("list_keys", Need::Read),
    ("find_members", Need::Read),
    ("get_member", Need::Read),
    ("list_wallets", Need::Read),
    ("get_wallet", Need::Read),
    ("wallet_history", Need::Read),
    ("wallet_balance", Need::Read),
    ("wallet_holds", Need::Read),
    ("list_orders", Need::Read),
    ("get_order", Need::Read),
    ("list_bookings", Need::Read),
    ("get_booking", Need::Read),
    ("list_adjustments", Need::Read),
    ("get_adjustment", Need::Read),
    ("get_adjustment_limits", Need::Read),
    ("list_sftp_users", Need::Read),
    ("sftp_host_key", Need::Read),
    ("list_mappings", Need::Read),
    ("get_mapping", Need::Read),
    ("check_mapping", Need::Read),
    ("list_batches", Need::Read),
    ("get_batch", Need::Read),
    ("batch_rejected_rows", Need::Read),
    ("list_rule_sets", Need::Read),
    ("get_rule_set", Need::Read),
    ("test_rules", Need::Read),
    ("list_tiers", Need::Read),
    ("get_policy", Need::Read),
    ("export_campaign_catalogue", Need::Read),
    ("search_campaign_products", Need::Read),
    ("list_pending_reviews", Need::Read),
    ("list_webhooks", Need::Read),
    ("get_webhook", Need::Read),
    ("list_webhook_attempts", Need::Read),
    ("list_exports", Need::Read),
    ("start_export", Need::Read),
    ("download_export", Need::Read),
    ("get_export_schedule", Need::Read),
    ("create_campaign", Need::Configure),
    ("issue_key", Need::Configure),
    ("revoke_key", Need::Configure),
    ("add_sftp_user", Need::Configure),
    ("add_sftp_key", Need::Configure),
    ("disable_sftp_user", Need::Configure),
    ("remove_sftp_user", Need::Configure),
    ("set_mapping", Need::Configure),
    ("remove_mapping", Need::Configure),
    ("set_rule_set", Need::Configure),
    ("backtest_rules", Need::Configure),
    ("add_tier", Need::Configure),
    ("remove_tier", Need::Configure),
    ("set_policy", Need::Configure),
    ("import_campaign_catalogue", Need::Configure),
    ("add_webhook", Need::Configure),
    ("update_webhook", Need::Configure),
    ("remove_webhook", Need::Configure),
    ("rotate_webhook_secret", Need::Configure),
    ("test_webhook", Need::Configure),
    ("redeliver_webhook", Need::Configure),
    ("set_export_schedule", Need::Configure),
    ("send_batch", Need::Configure),
    ("dry_run_batch", Need::Configure),
    ("remove_export_schedule", Need::Configure),
    ("adjust_wallet", Need::Support),
    ("erase_member", Need::Support),
    ("approve_adjustment", Need::Support),
    ("reject_adjustment", Need::Support),
    ("bulk_adjust", Need::Support),
    ("cancel_order", Need::Support),
    ("cancel_order_line", Need::Support),
    ("update_booking", Need::Support),
    ("approve_review", Need::Support),
    ("remove_review", Need::Support),
    ("create_org", Need::Service),
    ("list_audit_log", Need::Service),
    ("verify_audit_log", Need::Service),
    ("export_audit_log", Need::Service),
    ("list_sftp_bans", Need::Service),
    ("lift_sftp_ban", Need::Service),
    ("audit_ledger", Need::Service),
    ("expire_due", Need::Service),
    ("list_export_schedules", Need::Service),
    ("list_operators", Need::Operators),
    ("add_operator", Need::Operators),
    ("get_operator", Need::Operators),
    ("disable_operator", Need::Operators),
    ("enable_operator", Need::Operators),
    ("reset_operator_password", Need::Operators),
    ("reset_operator_two_factor", Need::Operators),
    ("set_operator_role", Need::Operators),
    ("remove_operator", Need::Operators),
    ("get_settings", Need::Operators),
    ("set_settings", Need::Operators),
    ("set_adjustment_limits", Need::Operators),
    ("prune_audit_log", Need::Operators),
];

/// What operation `id` needs.
pub fn need_of(id: &str) -> Option<Need> {
    OPERATIONS
        .iter()
        .find(|(name, _)| *name == id)
        .map(|(_, need)| *need)
}

/// The table as docs/operators.md shows it: one row per need, the roles that have it and the
/// operations that need it.
pub fn markdown() -> String {
    let roles = [
        Role::Owner,
        Role::Admin,
        Role::OrgAdmin,
        Role::Support,
        Role::Viewer,
    ];
    let mut out = String::from("| Need | Roles | Operations |\n|---|---|---|\n");
    for need in Need::ALL {
        let who = if need == Need::Open {
            "anyone".to_owned()
        } else {
            roles
                .iter()
                .filter(|role| need.allows(**role))
                .map(|role| format!("`{role}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let operations = OPERATIONS
            .iter()
            .filter(|(_, n)| *n == need)
            .map(|(id, _)| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let operations = if operations.is_empty() {
            "none yet".to_owned()
        } else {
            operations
        };
        out.push_str(&format!("| `{}` | {who} | {operations} |\n", need.as_str()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_show_the_table_the_code_enforces() {
        let docs = include_str!("../../docs/operators.md");
        assert!(
            docs.contains(&markdown()),
            "docs/operators.md must hold this table:\n{}",
            markdown()
        );
    }

    #[test]
    fn only_an_owner_manages_operators_and_every_role_reads() {
        for role in [
            Role::Owner,
            Role::Admin,
            Role::OrgAdmin,
            Role::Support,
            Role::Viewer,
        ] {
            assert!(Need::Read.allows(role));
            assert_eq!(Need::Operators.allows(role), role == Role::Owner);
        }
        assert!(!Need::Configure.allows(Role::Support));
        assert!(
            !Need::Support.allows(Role::Admin),
            "admins configure, support adjusts"
        );
        assert!(!Need::Configure.allows(Role::Viewer));
    }
}
