//! Operator accounts on both backends: a one-time password kept only hashed, grants by role,
//! the last owner kept, and every change an acting store makes recorded in the audit trail.

use store::audit::{Action, Actor, Trail};
use store::{CodeKey, NewOperator, Role, SessionLimits, SignIn, Store, StoreError, backend_tests};

fn new(email: &str, role: Role, orgs: &[&str]) -> NewOperator {
    NewOperator {
        email: email.into(),
        role,
        orgs: orgs.iter().map(ToString::to_string).collect(),
        allowed_addresses: Vec::new(),
    }
}

async fn an_operator_gets_a_one_time_password_kept_only_hashed(store: Store) {
    let (owner, password) = store
        .operators()
        .add(new(" Ada@Example.com ", Role::Owner, &[]))
        .await
        .unwrap();
    assert_eq!(owner.email, "ada@example.com");
    assert!(owner.must_change_password);
    assert_eq!(password.reveal().len(), 24);
    assert!(!format!("{password:?}").contains(password.reveal()));
    let stored: Vec<(String,)> = store
        .read_rows("SELECT password_hash FROM operators", &[])
        .await
        .unwrap();
    assert!(stored[0].0.starts_with("$argon2id$"), "{}", stored[0].0);
    assert!(!stored[0].0.contains(password.reveal()));
    assert_eq!(
        store.operators().find("ADA@example.com").await.unwrap(),
        owner
    );
    let again = store
        .operators()
        .add(new("ada@example.com", Role::Admin, &[]))
        .await;
    assert!(
        matches!(again, Err(StoreError::Conflict { field: "email" })),
        "{again:?}"
    );
    let (reset, second) = store.operators().reset_password(&owner.id).await.unwrap();
    assert_ne!(second, password);
    assert!(reset.must_change_password);
}

async fn a_role_holds_the_organisations_it_acts_on(store: Store) {
    let org = store.tenancy().create_org("Acme").await.unwrap();
    let operators = store.operators();
    let refused = operators
        .add(new("s@example.com", Role::Support, &[]))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Invalid { field: "orgs", .. })),
        "{refused:?}"
    );
    let refused = operators
        .add(new("a@example.com", Role::Admin, &[&org.id]))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Invalid { field: "orgs", .. })),
        "{refused:?}"
    );
    let unknown = operators
        .add(new("v@example.com", Role::Viewer, &["nowhere"]))
        .await;
    assert!(
        matches!(
            &unknown,
            Err(StoreError::UnknownReference { field: "orgs", .. })
        ),
        "{unknown:?}"
    );
    let (support, _) = operators
        .add(new("s@example.com", Role::Support, &[&org.id, &org.id]))
        .await
        .unwrap();
    assert_eq!(support.orgs, vec![org.id.clone()]);
    let mut addresses = new("n@example.com", Role::Viewer, &[&org.id]);
    addresses.allowed_addresses = vec!["10.0.0.0/8".into(), "2001:db8::1".into()];
    let (viewer, _) = operators.add(addresses).await.unwrap();
    assert_eq!(viewer.allowed_addresses, ["10.0.0.0/8", "2001:db8::1/128"]);
    let listed = operators.list().await.unwrap();
    assert_eq!(listed, vec![support.clone(), viewer]);
    operators.remove(&support.email).await.unwrap();
    assert!(matches!(
        operators.find(&support.id).await,
        Err(StoreError::NotFound { what: "operator" })
    ));
}

async fn the_last_enabled_owner_stays(store: Store) {
    let operators = store.operators();
    let (first, _) = operators
        .add(new("one@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    for refused in [
        operators.disable(&first.id).await,
        operators.remove(&first.id).await,
    ] {
        assert!(
            matches!(
                &refused,
                Err(StoreError::Refused {
                    code: "last_owner",
                    ..
                })
            ),
            "{refused:?}"
        );
    }
    let (second, _) = operators
        .add(new("two@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    let disabled = operators.disable(&first.id).await.unwrap();
    assert!(disabled.disabled_at.is_some());
    let refused = operators.disable(&second.id).await;
    assert!(
        matches!(
            &refused,
            Err(StoreError::Refused {
                code: "last_owner",
                ..
            })
        ),
        "{refused:?}"
    );
    operators.enable(&first.id).await.unwrap();
    operators.remove(&second.id).await.unwrap();
    assert_eq!(operators.list().await.unwrap().len(), 1);
}

/// Each write an acting store makes carries its entry; a failed action gets one saying so; an
/// action that changed nothing gets none.
async fn an_acting_store_records_who_changed_what(store: Store) {
    let actor = Actor::local("ops");
    let trail = Trail::new(
        actor.clone(),
        Action::new("org.create").after(serde_json::json!({"name": "Acme", "password": "x"})),
    );
    let org = store
        .acting(trail, |store| async move {
            store.tenancy().create_org("Acme").await
        })
        .await
        .unwrap();
    let failed = Trail::new(actor.clone(), Action::new("org.create"));
    let refused = store
        .acting(failed, |store| async move {
            store.tenancy().create_org(" ").await
        })
        .await;
    assert!(refused.is_err());
    let read = Trail::new(actor, Action::new("org.list"));
    store
        .acting(
            read,
            |store| async move { store.tenancy().list_orgs().await },
        )
        .await
        .unwrap();
    let page = store::audit::log::list(
        store.db(),
        &store::audit::log::AuditFilter::default(),
        store::Page::default(),
    )
    .await
    .unwrap();
    let entries: Vec<_> = page
        .items
        .iter()
        .map(|e| {
            (
                e.operation.as_str(),
                e.actor_kind.as_str(),
                e.outcome.as_str(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("org.create", "local", "failed: name: must not be empty"),
            ("org.create", "local", "ok"),
        ]
    );
    let created = &page.items[1];
    assert_eq!(created.actor_name, "ops");
    assert_eq!(
        created.after.as_deref(),
        Some(r#"{"name":"Acme","password":"[redacted]"}"#)
    );
    assert_eq!(store.tenancy().get_org(&org.id).await.unwrap().name, "Acme");
    assert!(
        store::audit::chain::verify(store.db())
            .await
            .unwrap()
            .intact()
    );
}

/// The data key TOTP secrets are sealed with.
fn key() -> CodeKey {
    CodeKey::new(&[7; 32])
}

fn attempt(email: &str, password: &str, address: &str) -> SignIn {
    SignIn {
        email: email.into(),
        password: password.into(),
        second_factor: None,
        address: Some(address.parse().unwrap()),
        user_agent: Some("tests".into()),
        request_id: None,
    }
}

/// The right password opens a session whose token authenticates until it is revoked; a wrong
/// one is refused the same way whether the e-mail is known or not.
async fn signing_in_opens_a_session_until_it_ends(store: Store) {
    let limits = SessionLimits::default();
    let operators = store.operators();
    let (owner, password) = operators
        .add(new("o@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    let opened = operators
        .sign_in(
            attempt("O@example.com", password.reveal(), "192.0.2.1"),
            limits,
            &key(),
        )
        .await
        .unwrap();
    assert_eq!(opened.operator.id, owner.id);
    assert!(!format!("{opened:?}").contains(&opened.token));
    let store::SignedIn {
        operator: who,
        session,
        ..
    } = operators
        .authenticate(&opened.token, limits)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (who.id.as_str(), session.id.as_str()),
        (owner.id.as_str(), opened.session.id.as_str())
    );
    assert_eq!(session.address.as_deref(), Some("192.0.2.1"));
    for refused in [
        operators
            .sign_in(
                attempt("o@example.com", "wrong password", "192.0.2.1"),
                limits,
                &key(),
            )
            .await,
        operators
            .sign_in(
                attempt("nobody@example.com", "wrong password", "192.0.2.1"),
                limits,
                &key(),
            )
            .await,
    ] {
        assert!(
            matches!(
                &refused,
                Err(StoreError::Refused {
                    code: "wrong_credentials",
                    ..
                })
            ),
            "{refused:?}"
        );
    }
    assert_eq!(
        operators.sessions(&owner.id, limits).await.unwrap(),
        vec![session.clone()]
    );
    operators
        .revoke_session(&owner.id, &session.id)
        .await
        .unwrap();
    assert!(
        operators
            .authenticate(&opened.token, limits)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        operators
            .sessions(&owner.id, limits)
            .await
            .unwrap()
            .is_empty()
    );

    // Unused for longer than the idle limit, or past its absolute end: over.
    let idle = operators
        .sign_in(
            attempt("o@example.com", password.reveal(), "192.0.2.1"),
            limits,
            &key(),
        )
        .await
        .unwrap();
    store.clock().advance(chrono::Duration::seconds(29 * 60));
    assert!(
        operators
            .authenticate(&idle.token, limits)
            .await
            .unwrap()
            .is_some()
    );
    store.clock().advance(chrono::Duration::seconds(29 * 60));
    assert!(
        operators
            .authenticate(&idle.token, limits)
            .await
            .unwrap()
            .is_some()
    );
    store.clock().advance(chrono::Duration::seconds(31 * 60));
    assert!(
        operators
            .authenticate(&idle.token, limits)
            .await
            .unwrap()
            .is_none()
    );
    let short = SessionLimits {
        absolute: chrono::Duration::minutes(10),
        ..limits
    };
    let brief = operators
        .sign_in(
            attempt("o@example.com", password.reveal(), "192.0.2.1"),
            short,
            &key(),
        )
        .await
        .unwrap();
    store.clock().advance(chrono::Duration::seconds(11 * 60));
    assert!(
        operators
            .authenticate(&brief.token, short)
            .await
            .unwrap()
            .is_none()
    );

    // The trail holds each sign-in and each failure, never a password.
    let trail = store::audit::log::list(
        store.db(),
        &store::audit::log::AuditFilter {
            operation: Some("session.".into()),
            ..Default::default()
        },
        store::Page::default(),
    )
    .await
    .unwrap();
    let outcomes: Vec<_> = trail
        .items
        .iter()
        .rev()
        .map(|e| (e.actor_name.as_str(), e.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("o@example.com", "ok"),
            ("o@example.com", "failed: wrong e-mail or password"),
            ("nobody@example.com", "failed: wrong e-mail or password"),
            ("o@example.com", "ok"),
            ("o@example.com", "ok"),
        ]
    );
}

/// Five wrong passwords lock the account (the sixth attempt, right or wrong, is refused
/// without a check) until the window has passed; then its owner signs in.
async fn failed_sign_ins_lock_the_account_for_a_while(store: Store) {
    let limits = SessionLimits::default();
    let operators = store.operators();
    let (_, password) = operators
        .add(new("o@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    for n in 1..=5 {
        let refused = operators
            .sign_in(
                attempt("o@example.com", "guess", "198.51.100.7"),
                limits,
                &key(),
            )
            .await;
        let locked = matches!(&refused, Err(StoreError::Throttled { code: "locked", .. }));
        assert_eq!(locked, n == 5, "attempt {n}: {refused:?}");
    }
    let refused = operators
        .sign_in(
            attempt("o@example.com", password.reveal(), "192.0.2.9"),
            limits,
            &key(),
        )
        .await;
    match refused {
        Err(StoreError::Throttled {
            retry_after,
            message,
            ..
        }) => {
            assert!((899..=900).contains(&retry_after), "{retry_after}");
            assert!(message.contains("locked until"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    store
        .clock()
        .advance(chrono::Duration::seconds(15 * 60 + 1));
    operators
        .sign_in(
            attempt("o@example.com", password.reveal(), "192.0.2.9"),
            limits,
            &key(),
        )
        .await
        .unwrap();
}

/// A disabled operator's sessions end at once; an operator kept to some addresses signs in
/// from those only.
async fn disabled_operators_and_foreign_addresses_are_kept_out(store: Store) {
    let limits = SessionLimits::default();
    let operators = store.operators();
    operators
        .add(new("o@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    let mut admin = new("a@example.com", Role::Admin, &[]);
    admin.allowed_addresses = vec!["10.0.0.0/8".into()];
    let (admin, password) = operators.add(admin).await.unwrap();
    let refused = operators
        .sign_in(
            attempt("a@example.com", password.reveal(), "192.0.2.1"),
            limits,
            &key(),
        )
        .await;
    assert!(
        matches!(
            &refused,
            Err(StoreError::Refused {
                code: "address_not_allowed",
                ..
            })
        ),
        "{refused:?}"
    );
    let opened = operators
        .sign_in(
            attempt("a@example.com", password.reveal(), "10.1.2.3"),
            limits,
            &key(),
        )
        .await
        .unwrap();
    operators.disable(&admin.id).await.unwrap();
    assert!(
        operators
            .authenticate(&opened.token, limits)
            .await
            .unwrap()
            .is_none()
    );
    let refused = operators
        .sign_in(
            attempt("a@example.com", password.reveal(), "10.1.2.3"),
            limits,
            &key(),
        )
        .await;
    assert!(
        matches!(
            &refused,
            Err(StoreError::Refused {
                code: "operator_disabled",
                ..
            })
        ),
        "{refused:?}"
    );
}

/// TOTP: on once a first code confirms it, then asked at every sign-in; each code and each
/// recovery code taken once; off again when reset.
async fn a_second_factor_is_asked_once_enrolled(store: Store) {
    use store::operators_totp as totp;
    let limits = SessionLimits::default();
    let operators = store.operators();
    let (owner, password) = operators
        .add(new("o@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    let enrolment = operators
        .begin_totp(&owner, &key(), "Rewards")
        .await
        .unwrap();
    assert!(
        enrolment
            .uri
            .starts_with("otpauth://totp/Rewards:o@example.com?secret=")
    );
    let secret = totp::from_base32(&enrolment.secret).unwrap();
    let code_now = || {
        let step = totp::step_of(store.now().timestamp());
        format!("{:06}", totp::code_at(&secret, step))
    };
    let wrong = operators.confirm_totp(&owner.id, "000000", &key()).await;
    let wrong_code = matches!(
        &wrong,
        Err(StoreError::Refused {
            code: "wrong_code",
            ..
        })
    );
    assert!(wrong_code || code_now() == "000000", "{wrong:?}");
    let confirmed_with = code_now();
    let recovery = operators
        .confirm_totp(&owner.id, &confirmed_with, &key())
        .await
        .unwrap();
    assert_eq!(recovery.0.len(), 10);
    assert!(operators.find(&owner.id).await.unwrap().two_factor);
    let again = operators.begin_totp(&owner, &key(), "Rewards").await;
    assert!(
        matches!(
            &again,
            Err(StoreError::Refused {
                code: "two_factor_on",
                ..
            })
        ),
        "{again:?}"
    );

    let with = |factor: &str| {
        let mut attempt = attempt("o@example.com", password.reveal(), "192.0.2.1");
        attempt.second_factor = Some(factor.to_owned());
        attempt
    };
    let none = operators
        .sign_in(
            attempt("o@example.com", password.reveal(), "192.0.2.1"),
            limits,
            &key(),
        )
        .await;
    assert!(
        matches!(
            &none,
            Err(StoreError::Refused {
                code: "second_factor_required",
                ..
            })
        ),
        "{none:?}"
    );
    let reused = operators
        .sign_in(with(&confirmed_with), limits, &key())
        .await;
    assert!(
        matches!(
            &reused,
            Err(StoreError::Refused {
                code: "wrong_second_factor",
                ..
            })
        ),
        "{reused:?}"
    );
    store.clock().advance(chrono::Duration::seconds(30));
    let fresh = code_now();
    let opened = operators
        .sign_in(with(&fresh), limits, &key())
        .await
        .unwrap();
    assert!(!opened.must_enrol_two_factor);
    let replayed = operators.sign_in(with(&fresh), limits, &key()).await;
    assert!(replayed.is_err(), "{replayed:?}");
    let spare = recovery.0[3].to_uppercase();
    operators
        .sign_in(with(&spare), limits, &key())
        .await
        .unwrap();
    let spent = operators.sign_in(with(&spare), limits, &key()).await;
    assert!(spent.is_err(), "{spent:?}");

    operators.reset_totp("o@example.com").await.unwrap();
    assert!(!operators.find(&owner.id).await.unwrap().two_factor);
    operators.require_two_factor(true).await.unwrap();
    let must_enrol = operators
        .sign_in(
            attempt("o@example.com", password.reveal(), "192.0.2.1"),
            limits,
            &key(),
        )
        .await
        .unwrap();
    assert!(must_enrol.must_enrol_two_factor);
}

/// The operator's own new password: the current one checked, the demand to change it met, its
/// other sessions ended.
async fn changing_the_password_ends_the_other_sessions(store: Store) {
    let limits = SessionLimits::default();
    let operators = store.operators();
    let (owner, password) = operators
        .add(new("o@example.com", Role::Owner, &[]))
        .await
        .unwrap();
    let sealing = key();
    let sign_in = |password: String| {
        operators.sign_in(
            attempt("o@example.com", &password, "192.0.2.1"),
            limits,
            &sealing,
        )
    };
    let here = sign_in(password.reveal().to_owned()).await.unwrap();
    let elsewhere = sign_in(password.reveal().to_owned()).await.unwrap();
    let wrong = operators
        .change_password(
            &owner.id,
            "not it",
            "a new passphrase",
            Some(&here.session.id),
        )
        .await;
    assert!(
        matches!(
            &wrong,
            Err(StoreError::Refused {
                code: "wrong_credentials",
                ..
            })
        ),
        "{wrong:?}"
    );
    let short = operators
        .change_password(
            &owner.id,
            password.reveal(),
            "short",
            Some(&here.session.id),
        )
        .await;
    assert!(
        matches!(
            &short,
            Err(StoreError::Invalid {
                field: "newPassword",
                ..
            })
        ),
        "{short:?}"
    );
    let changed = operators
        .change_password(
            &owner.id,
            password.reveal(),
            "a new passphrase",
            Some(&here.session.id),
        )
        .await
        .unwrap();
    assert!(!changed.must_change_password);
    assert!(
        operators
            .authenticate(&here.token, limits)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        operators
            .authenticate(&elsewhere.token, limits)
            .await
            .unwrap()
            .is_none()
    );
    assert!(sign_in(password.reveal().to_owned()).await.is_err());
    sign_in("a new passphrase".into()).await.unwrap();
}

backend_tests!(
    changing_the_password_ends_the_other_sessions,
    a_second_factor_is_asked_once_enrolled,
    signing_in_opens_a_session_until_it_ends,
    failed_sign_ins_lock_the_account_for_a_while,
    disabled_operators_and_foreign_addresses_are_kept_out,
    an_operator_gets_a_one_time_password_kept_only_hashed,
    a_role_holds_the_organisations_it_acts_on,
    the_last_enabled_owner_stays,
    an_acting_store_records_who_changed_what,
);
