//! Transfers on both backends: both sides or neither, the tokens keeping their lots' expiry
//! dates on the receiving side, earnings moved only by policy, refusals, concurrency, audited.

use chrono::{Duration, Utc};
use store::{
    Campaign, EarnInput, Expiry, NewMember, NewTier, NewTransfer, NewWallet, Page, Policy,
    RuleBook, Store, StoreError, Tokens, TransactionFilter, TransactionKind, Transfers,
    backend_tests,
};

use crate::holds::hold;
use crate::ledger::{drain, earn_on, reused_for, setup};

fn transfer(external_id: &str, from: &str, to: &str, amount: i64) -> NewTransfer {
    NewTransfer {
        from: from.into(),
        to: to.into(),
        external_id: external_id.into(),
        amount: Tokens::whole(amount),
        description: Some("A gift".into()),
        comment: None,
        meta: None,
    }
}

/// Member `card-2` with wallet `w-2` in `campaign`.
async fn second_wallet(store: &Store, campaign: &Campaign) -> String {
    let member = NewMember {
        first_name: "Grace".into(),
        idp: "reference".into(),
        user_id: "u-2".into(),
        external_id: "card-2".into(),
        ..Default::default()
    };
    store
        .members()
        .create_member(&campaign.org(), member)
        .await
        .unwrap();
    let wallet = NewWallet {
        owner: Some("card-2".into()),
        external_id: Some("w-2".into()),
        name: None,
    };
    store
        .ledger()
        .create_wallet(campaign, wallet)
        .await
        .unwrap()
        .id
}

fn earn_into(wallet: &str, id: &str, amount: &str, days_ago: i64) -> EarnInput {
    EarnInput {
        wallet: wallet.into(),
        ..earn_on(id, amount, days_ago)
    }
}

async fn figures(store: &Store, campaign: &Campaign, wallet: &str) -> (Tokens, Tokens) {
    let w = store.ledger().get_wallet(campaign, wallet).await.unwrap();
    (w.balance, w.earned)
}

async fn clean(store: &Store) {
    let found = store.ledger().audit().await.unwrap();
    assert!(found.is_empty(), "{found:?}");
}

/// The receiver gets a lot per expiry date among the sender's lots taken (oldest first), each
/// expiring on its date; both sides list the transfer, linked; lifetime earnings stay.
async fn a_transfer_moves_lots_with_their_expiry(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let policy = Policy {
        expiry: Expiry::Days(30),
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
    second_wallet(&store, &s.campaign).await;
    for (id, amount, days_ago) in [("e-1", "10", 25), ("e-2", "20", 10)] {
        store
            .ledger()
            .submit_earn(&s.campaign, earn_into("w-1", id, amount, days_ago))
            .await
            .unwrap();
    }
    store
        .ledger()
        .submit_earn(&s.campaign, earn_into("w-2", "e-3", "4", 0))
        .await
        .unwrap();
    drain(&store, &book).await;

    let made = store
        .ledger()
        .transfer(&s.campaign, transfer("t-1", "w-1", "w-2", 15))
        .await
        .unwrap();
    assert!(!made.replayed);
    let t = &made.transfer;
    assert_eq!((t.amount, t.earned_moved), (Tokens::whole(15), false));
    let received: Vec<Tokens> = t.received.iter().map(|r| r.amount).collect();
    assert_eq!(
        received,
        [Tokens::whole(10), Tokens::whole(5)],
        "e-1's, then e-2's"
    );
    let now = Utc::now();
    let soon = t.received[0].expires_at.unwrap();
    assert!(soon > now + Duration::days(4) && soon < now + Duration::days(6));
    assert_eq!(
        figures(&store, &s.campaign, "w-1").await,
        (Tokens::whole(15), Tokens::whole(30))
    );
    assert_eq!(
        figures(&store, &s.campaign, "w-2").await,
        (Tokens::whole(19), Tokens::whole(4))
    );
    clean(&store).await;

    // Both histories show it, in their own kinds, linked.
    let outs = TransactionFilter {
        kinds: vec![TransactionKind::TransferOut],
        ..Default::default()
    };
    let listed = store
        .ledger()
        .list_transactions(&s.campaign, &outs, Page::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].id, t.id);
    let ins = TransactionFilter {
        kinds: vec![TransactionKind::TransferIn],
        ..Default::default()
    };
    let listed = store
        .ledger()
        .list_transactions(&s.campaign, &ins, Page::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    assert!(
        listed
            .items
            .iter()
            .all(|leg| leg.corrects.as_deref() == Some(t.id.as_str()))
    );

    // The same request again answers the first; another under its key is refused.
    let again = store
        .ledger()
        .transfer(&s.campaign, transfer("t-1", "w-1", "w-2", 15))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.transfer, made.transfer);
    let other = store
        .ledger()
        .transfer(&s.campaign, transfer("t-1", "w-1", "w-2", 16))
        .await;
    assert_eq!(reused_for(&other), Some("amount"));
    assert_eq!(
        store
            .ledger()
            .get_transfer(&s.campaign, "t-1")
            .await
            .unwrap(),
        made.transfer
    );

    // The received lots expire on the sender's dates: e-1's 10 in five days.
    assert_eq!(
        store
            .ledger()
            .expire(now + Duration::days(6))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        figures(&store, &s.campaign, "w-2").await.0,
        Tokens::whole(9)
    );
    // The receiver spends them as its own lots (its own e-3 first: dated earlier).
    store
        .ledger()
        .burn(&s.campaign, burn_from("w-2", "b-1", 9))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s.campaign, "w-2").await.0, Tokens::ZERO);
    clean(&store).await;
}

/// A burn of `amount` from `wallet` under `id`.
fn burn_from(wallet: &str, id: &str, amount: i64) -> store::NewBurn {
    store::NewBurn {
        spend: store::Spend {
            wallet: wallet.into(),
            ..(crate::ledger::burn(id, amount)).spend
        },
        ..crate::ledger::burn(id, amount)
    }
}

/// What a transfer may not do, each refused with nothing changed.
async fn refused_transfers_change_nothing(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    second_wallet(&store, &s.campaign).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_into("w-1", "e-1", "20", 0))
        .await
        .unwrap();
    drain(&store, &book).await;
    let refused = |r: &Result<store::Transferred, StoreError>| match r {
        Err(StoreError::Refused { code, field, .. }) => Some((*code, field.clone())),
        _ => None,
    };

    let same = store
        .ledger()
        .transfer(&s.campaign, transfer("t-1", "w-1", "w-1", 1))
        .await;
    assert_eq!(
        refused(&same),
        Some(("same_wallet", Some("toWalletId".into())))
    );
    let nowhere = store
        .ledger()
        .transfer(&s.campaign, transfer("t-2", "w-1", "nope", 1))
        .await;
    assert!(
        matches!(
            nowhere,
            Err(StoreError::UnknownReference {
                field: "toWalletId",
                ..
            })
        ),
        "{nowhere:?}"
    );
    // A wallet of another campaign of the organisation (another currency).
    let new = store::NewCampaign {
        name: "Miles".into(),
        currency: "MLS".into(),
        ..Default::default()
    };
    let miles = store
        .tenancy()
        .create_campaign(&s.campaign.org(), new)
        .await
        .unwrap();
    let wallet = NewWallet {
        owner: Some("card-1".into()),
        external_id: Some("m-1".into()),
        name: None,
    };
    store.ledger().create_wallet(&miles, wallet).await.unwrap();
    let across = store
        .ledger()
        .transfer(&s.campaign, transfer("t-3", "w-1", "m-1", 1))
        .await;
    assert_eq!(
        refused(&across),
        Some(("other_campaign", Some("toWalletId".into())))
    );

    // What is held is not the sender's to give; a refusal for the balance is kept.
    store
        .ledger()
        .hold(&s.campaign, hold("h-1", 15))
        .await
        .unwrap();
    let short = store
        .ledger()
        .transfer(&s.campaign, transfer("t-4", "w-1", "w-2", 6))
        .await;
    assert!(
        matches!(short, Err(StoreError::InsufficientBalance { available }) if available == Tokens::whole(5)),
        "{short:?}"
    );
    store.ledger().void_hold(&s.campaign, "h-1").await.unwrap();
    let kept = store
        .ledger()
        .transfer(&s.campaign, transfer("t-4", "w-1", "w-2", 6))
        .await;
    assert!(
        matches!(kept, Err(StoreError::InsufficientBalance { .. })),
        "{kept:?}"
    );

    // A daily cap, then a programme that forbids transfers.
    let capped = Policy {
        transfer_daily_cap: Some(Tokens::whole(10)),
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, capped)
        .await
        .unwrap();
    store
        .ledger()
        .transfer(&s.campaign, transfer("t-5", "w-1", "w-2", 6))
        .await
        .unwrap();
    let over = store
        .ledger()
        .transfer(&s.campaign, transfer("t-6", "w-1", "w-2", 5))
        .await;
    assert_eq!(
        refused(&over),
        Some(("transfer_cap_exceeded", Some("amount".into())))
    );
    store
        .ledger()
        .transfer(&s.campaign, transfer("t-7", "w-1", "w-2", 4))
        .await
        .unwrap();
    let forbidden = Policy {
        transfers: Transfers::Forbidden,
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, forbidden)
        .await
        .unwrap();
    let no = store
        .ledger()
        .transfer(&s.campaign, transfer("t-8", "w-1", "w-2", 1))
        .await;
    assert_eq!(refused(&no), Some(("transfers_forbidden", None)));
    assert_eq!(
        figures(&store, &s.campaign, "w-1").await.0,
        Tokens::whole(10)
    );
    assert_eq!(
        figures(&store, &s.campaign, "w-2").await.0,
        Tokens::whole(10)
    );
    clean(&store).await;
}

/// A programme whose transfers move earnings moves the tiers with them.
async fn earnings_and_tiers_move_when_the_policy_says_so(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    second_wallet(&store, &s.campaign).await;
    let silver = NewTier {
        name: "Silver".into(),
        precedence: 1,
        threshold: Tokens::whole(50),
        benefits: Vec::new(),
        image_url: None,
    };
    store
        .programme()
        .create_tier(&s.campaign, silver)
        .await
        .unwrap();
    let policy = Policy {
        transfers_move_earned: true,
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, earn_into("w-1", "e-1", "60", 0))
        .await
        .unwrap();
    drain(&store, &book).await;
    let tier = |wallet: &'static str| {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        async move {
            let w = store.ledger().get_wallet(&campaign, wallet).await.unwrap();
            w.tier.map(|t| t.name)
        }
    };
    assert_eq!(tier("w-1").await.as_deref(), Some("Silver"));
    let made = store
        .ledger()
        .transfer(&s.campaign, transfer("t-1", "w-1", "w-2", 55))
        .await
        .unwrap();
    assert!(made.transfer.earned_moved);
    assert_eq!(
        figures(&store, &s.campaign, "w-1").await,
        (Tokens::whole(5), Tokens::whole(5))
    );
    assert_eq!(
        figures(&store, &s.campaign, "w-2").await,
        (Tokens::whole(55), Tokens::whole(55))
    );
    assert_eq!(tier("w-1").await, None);
    assert_eq!(tier("w-2").await.as_deref(), Some("Silver"));
    clean(&store).await;
}

/// Transfers both ways between two wallets at once, with burns beside them: none deadlocks,
/// none overdraws, and the tokens add up.
async fn concurrent_transfers_both_ways_add_up(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    second_wallet(&store, &s.campaign).await;
    for (wallet, id) in [("w-1", "e-1"), ("w-2", "e-2")] {
        store
            .ledger()
            .submit_earn(&s.campaign, earn_into(wallet, id, "100", 0))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let mut tasks = Vec::new();
    for i in 0..200i64 {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        tasks.push(tokio::spawn(async move {
            let (from, to) = if i % 2 == 0 {
                ("w-1", "w-2")
            } else {
                ("w-2", "w-1")
            };
            if i % 5 == 0 {
                let burn = burn_from(from, &format!("b-{i}"), 1);
                return store.ledger().burn(&campaign, burn).await.map(|_| 1);
            }
            let t = transfer(&format!("t-{i}"), from, to, 1 + i % 4);
            store.ledger().transfer(&campaign, t).await.map(|_| 0)
        }));
    }
    let mut burned = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(b) => burned += b,
            Err(StoreError::InsufficientBalance { .. }) => {}
            Err(err) => panic!("{err}"),
        }
    }
    let (a, _) = figures(&store, &s.campaign, "w-1").await;
    let (b, _) = figures(&store, &s.campaign, "w-2").await;
    assert!(a >= Tokens::ZERO && b >= Tokens::ZERO);
    assert_eq!(
        a.checked_add(b).unwrap(),
        Tokens::whole(200 - burned),
        "transfers move tokens, burns spend them"
    );
    clean(&store).await;
}

/// Twins of one transfer racing each other make it once (the others replay it); tokens given
/// to a wallet that has spent lots dated after them (an earn dated ahead) are still its to
/// spend.
async fn racing_twins_transfer_once_and_a_receiver_ahead_keeps_its_lot(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    second_wallet(&store, &s.campaign).await;
    let ahead = EarnInput {
        date: Utc::now() + Duration::hours(12),
        ..earn_into("w-2", "e-2", "10", 0)
    };
    for earn in [earn_into("w-1", "e-1", "100", 1), ahead] {
        store.ledger().submit_earn(&s.campaign, earn).await.unwrap();
    }
    drain(&store, &book).await;
    // w-2's position now lies in its lot dated ahead of the transfer's.
    store
        .ledger()
        .burn(&s.campaign, burn_from("w-2", "b-1", 4))
        .await
        .unwrap();
    let twins = (0..20).map(|_| {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        tokio::spawn(async move {
            let t = transfer("t-1", "w-1", "w-2", 5);
            store.ledger().transfer(&campaign, t).await
        })
    });
    let mut made = Vec::new();
    for twin in twins {
        made.push(twin.await.unwrap().unwrap());
    }
    assert_eq!(made.iter().filter(|m| !m.replayed).count(), 1);
    assert!(made.iter().all(|m| m.transfer == made[0].transfer));
    assert_eq!(
        figures(&store, &s.campaign, "w-1").await.0,
        Tokens::whole(95)
    );
    assert_eq!(
        figures(&store, &s.campaign, "w-2").await.0,
        Tokens::whole(11)
    );
    // The 6 left of the lot ahead and the 5 given.
    store
        .ledger()
        .burn(&s.campaign, burn_from("w-2", "b-2", 11))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s.campaign, "w-2").await.0, Tokens::ZERO);
    clean(&store).await;
}

backend_tests!(
    a_transfer_moves_lots_with_their_expiry,
    refused_transfers_change_nothing,
    earnings_and_tiers_move_when_the_policy_says_so,
    concurrent_transfers_both_ways_add_up,
    racing_twins_transfer_once_and_a_receiver_ahead_keeps_its_lot,
);
